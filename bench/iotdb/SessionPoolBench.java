// SessionPoolBench: the reference client of bench/iotdb/run.sh — a plain
// loop over IoTDB's official Java SessionPool doing the same operations as
// `hostprep probe iotdb` (scenario write: insertRecord of two FLOATs, one
// device per worker; batch: insertTablets of 10 devices x 50 rows x 2 FLOATs;
// mixed: 70% reads of the newest 50 rows x 2 of the worker's device, 30%
// insertTablet of 150 rows x 2), closed loop, one step of N workers.
//
// Usage: java SessionPoolBench HOST PORT USER PASSWORD SCENARIO WORKERS
//        DURATION_S WARMUP_S POOL_SIZE
// Prints one line:
//   java scenario=write workers=8 ops=... errors=... tps=... p50_ms=...
//   p95_ms=... cpu_per_op_us=...
// Latency is per operation, from before borrowing a session to after the
// answer (System.nanoTime); CPU is the JVM's process CPU time over the
// measured step (OperatingSystemMXBean.getProcessCpuTime), per operation.
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.iotdb.isession.pool.SessionDataSetWrapper;
import org.apache.iotdb.session.pool.SessionPool;
import org.apache.tsfile.enums.TSDataType;
import org.apache.tsfile.file.metadata.enums.CompressionType;
import org.apache.tsfile.file.metadata.enums.TSEncoding;
import org.apache.tsfile.write.record.Tablet;
import org.apache.tsfile.write.schema.IMeasurementSchema;
import org.apache.tsfile.write.schema.MeasurementSchema;

public class SessionPoolBench {
  static final List<String> MEASUREMENTS = Arrays.asList("temperature", "humidity");
  static final List<TSDataType> TYPES = Arrays.asList(TSDataType.FLOAT, TSDataType.FLOAT);
  static final int BATCH_DEVICES = 10, BATCH_ROWS = 50, MIXED_WRITE = 150, MIXED_READ = 50, READ_PCT = 70;

  static String db;
  static String scenario;
  static SessionPool pool;
  static final AtomicLong clock = new AtomicLong(1_700_000_000_000L);

  static String device(int i) { return db + ".d" + i; }

  static float value(Random rng, int m, long t) {
    double base = m == 0 ? 21 : 45;
    return (float) (base + 3 * Math.sin((t % 3600) / 573.0) + rng.nextDouble());
  }

  static List<IMeasurementSchema> schemas() {
    List<IMeasurementSchema> s = new ArrayList<>();
    for (String m : MEASUREMENTS) s.add(new MeasurementSchema(m, TSDataType.FLOAT));
    return s;
  }

  static void fill(Tablet tb, Random rng, int rows, long t0) {
    tb.reset();
    for (int r = 0; r < rows; r++) {
      tb.addTimestamp(r, t0 + r);
      for (int m = 0; m < MEASUREMENTS.size(); m++) tb.addValue(r, m, value(rng, m, t0 + r));
    }
    tb.setRowSize(rows);
  }

  /** One worker: runs until `end` (nanoTime), records latencies (µs) when `lat` is not null. */
  static final class Worker extends Thread {
    final int id; final long end; final long[][] lat; long ops, errors; int n;
    long[] buf = new long[1 << 16];
    Worker(int id, long end, boolean measure) { this.id = id; this.end = end; this.lat = measure ? new long[1][] : null; }

    public void run() {
      Random rng = new Random(id);
      List<IMeasurementSchema> sch = schemas();
      Map<String, Tablet> tablets = new HashMap<>();
      Tablet one = null;
      String sql = null;
      if (scenario.equals("batch")) {
        for (int j = 0; j < BATCH_DEVICES; j++) {
          String d = device(id * BATCH_DEVICES + j);
          tablets.put(d, new Tablet(d, sch, BATCH_ROWS));
        }
      } else if (scenario.equals("mixed")) {
        one = new Tablet(device(id), sch, MIXED_WRITE);
        sql = String.format("select %s, %s from %s order by time desc limit %d", MEASUREMENTS.get(0), MEASUREMENTS.get(1), device(id), MIXED_READ);
      }
      while (true) {
        long began = System.nanoTime();
        if (began >= end) break;
        try {
          switch (scenario) {
            case "write": {
              long t = clock.getAndIncrement();
              pool.insertRecord(device(id), t, MEASUREMENTS, TYPES, value(rng, 0, t), value(rng, 1, t));
              break;
            }
            case "batch": {
              long t0 = clock.getAndAdd(BATCH_ROWS);
              for (Tablet tb : tablets.values()) fill(tb, rng, BATCH_ROWS, t0);
              pool.insertTablets(tablets, true);
              break;
            }
            default: {
              if (rng.nextInt(100) < READ_PCT) {
                SessionDataSetWrapper ds = pool.executeQueryStatement(sql);
                try {
                  long pts = 0;
                  while (ds.hasNext()) { ds.next(); pts += 2; }
                } finally {
                  pool.closeResultSet(ds);
                }
              } else {
                fill(one, rng, MIXED_WRITE, clock.getAndAdd(MIXED_WRITE));
                pool.insertTablet(one, true);
              }
            }
          }
          if (lat != null) {
            if (n == buf.length) buf = Arrays.copyOf(buf, 2 * n);
            buf[n++] = (System.nanoTime() - began) / 1000;
          }
          ops++;
        } catch (Exception e) {
          errors++;
          ops++;
          if (errors == 1) System.err.println("java worker " + id + ": " + e);
        }
      }
    }
  }

  static Worker[] phase(int workers, double seconds, boolean measure) throws InterruptedException {
    long end = System.nanoTime() + (long) (seconds * 1e9);
    Worker[] ws = new Worker[workers];
    for (int i = 0; i < workers; i++) { ws[i] = new Worker(i, end, measure); ws[i].start(); }
    for (Worker w : ws) w.join();
    return ws;
  }

  static void createSeries(int devices) throws Exception {
    List<String> paths = new ArrayList<>();
    for (int d = 0; d < devices; d++) for (String m : MEASUREMENTS) paths.add(device(d) + "." + m);
    for (int i = 0; i < paths.size(); i += 1000) {
      List<String> chunk = paths.subList(i, Math.min(i + 1000, paths.size()));
      List<TSDataType> t = new ArrayList<>(); List<TSEncoding> e = new ArrayList<>(); List<CompressionType> c = new ArrayList<>();
      for (int j = 0; j < chunk.size(); j++) { t.add(TSDataType.FLOAT); e.add(TSEncoding.GORILLA); c.add(CompressionType.LZ4); }
      pool.createMultiTimeseries(chunk, t, e, c, null, null, null, null);
    }
  }

  public static void main(String[] a) throws Exception {
    if (a.length != 9) {
      System.err.println("usage: SessionPoolBench HOST PORT USER PASSWORD SCENARIO WORKERS DURATION_S WARMUP_S POOL_SIZE");
      System.exit(2);
    }
    String host = a[0]; int port = Integer.parseInt(a[1]);
    scenario = a[4]; int workers = Integer.parseInt(a[5]);
    double duration = Double.parseDouble(a[6]), warmup = Double.parseDouble(a[7]);
    int poolSize = Integer.parseInt(a[8]);
    db = "root.hostprep_jbench_" + Long.toHexString(System.nanoTime() & 0xffffffffL);
    pool = new SessionPool.Builder().host(host).port(port).user(a[2]).password(a[3]).maxSize(poolSize)
        .waitToGetSessionTimeoutInMs(5000).enableRedirection(false).build();
    try {
      pool.createDatabase(db);
      int devices = scenario.equals("batch") ? workers * BATCH_DEVICES : workers;
      createSeries(devices);
      if (scenario.equals("mixed")) {
        Random rng = new Random(1);
        Tablet tb = new Tablet(device(0), schemas(), MIXED_WRITE);
        for (int d = 0; d < devices; d++) {
          tb.setDeviceId(device(d));
          fill(tb, rng, MIXED_WRITE, clock.getAndAdd(MIXED_WRITE));
          pool.insertTablet(tb, true);
        }
      }
      if (warmup > 0) phase(workers, warmup, false);
      com.sun.management.OperatingSystemMXBean os =
          (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
      long cpu0 = os.getProcessCpuTime(), t0 = System.nanoTime();
      Worker[] ws = phase(workers, duration, true);
      double elapsed = (System.nanoTime() - t0) / 1e9;
      long cpu = os.getProcessCpuTime() - cpu0;
      long ops = 0, errors = 0; int n = 0;
      for (Worker w : ws) { ops += w.ops; errors += w.errors; n += w.n; }
      long[] all = new long[n]; int k = 0;
      for (Worker w : ws) { System.arraycopy(w.buf, 0, all, k, w.n); k += w.n; }
      Arrays.sort(all);
      double p50 = n > 0 ? all[(int) Math.min(n - 1, Math.ceil(0.50 * n) - 1)] / 1000.0 : 0;
      double p95 = n > 0 ? all[(int) Math.min(n - 1, Math.ceil(0.95 * n) - 1)] / 1000.0 : 0;
      System.out.printf("java scenario=%s workers=%d ops=%d errors=%d tps=%.1f p50_ms=%.3f p95_ms=%.3f cpu_per_op_us=%.1f%n",
          scenario, workers, ops, errors, (ops - errors) / elapsed, p50, p95, ops > 0 ? cpu / 1000.0 / ops : 0);
    } finally {
      try { pool.deleteDatabase(db); } catch (Exception e) { System.err.println("delete " + db + ": " + e); }
      pool.close();
    }
  }
}
