package mqtt

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/rawsys"
)

// writeTimeout bounds every write to the broker; a broker that stops
// reading fails the connection after this long instead of stalling a
// scheduler worker forever.
const writeTimeout = 5 * time.Second

// Read buffer sizes: publishers only read small acks, subscribers read
// every message.
const (
	pubReadBuf = 512
	subReadBuf = 64 << 10
)

// inflight is one QoS>0 PUBLISH waiting for PUBACK (QoS 1) or PUBCOMP
// (QoS 2).
type inflight struct {
	sched  int64 // scheduled send time, ns since run base
	sent   int64 // last (re)send time
	seq    uint32
	id     uint16
	gotRec bool // QoS 2: PUBREC seen, PUBREL sent
}

// conn is one MQTT connection: a publisher, a subscriber or the
// calibration client. Its reader goroutine owns br and rbuf; writes from
// the scheduler and the reader are serialised by mu.
type conn struct {
	r      *run
	nc     net.Conn
	br     *bufio.Reader
	client int // publisher number, or -1-i for subscriber i, or calibClient
	sub    bool

	mu       sync.Mutex
	bw       *bufio.Writer // subscribers only: acks are batched
	inflight []inflight
	nextID   uint16
	seq      uint32 // publishes written so far (next sequence number)
	// firstSched is the scheduled time of sequence number 0 (ns since
	// the run base): publish k was scheduled at firstSched + k *
	// PubInterval, which is how a lost message's latency is censored.
	firstSched int64
	// dialAt is when the scheduler started the connect and readyAt when
	// its CONNACK arrived (ns since the run base; publishers only): a
	// publish slot before readyAt passed while the client connected.
	dialAt, readyAt int64
	lastSent        int64
	dead            bool
	failErr         error // why a writer gave up on the connection
	byUs            bool  // closed on purpose by the probe
	ackBuf          [4]byte

	rbuf   []byte
	pong   chan struct{} // calibration client only
	suback chan []byte   // subscribers: SUBACK reason codes

	flushTimer *time.Timer // subscribers: deferred ack flush
	flushArmed bool

	// Polled publishers (see poller): no reader goroutine.
	polled bool
	// fd is a polled connection's socket: a duplicate that the
	// connection owns once poller.add closed nc (which takes the socket
	// out of Go's netpoller, where every ack raised a second readiness
	// event), used with raw read(2) and write(2) (no RawConn round trip
	// either: its fd lock and poll descriptor reset per call measured as
	// a fifth of the probe's user time). markDeadLocked closes it and
	// sets -1, so the number is never used after close(2) could hand it
	// to another socket. Writers hold mu; markDeadLocked holds mu and
	// fdMu; the poller's read holds fdMu only, so a writer waiting for
	// a full send buffer (writeLocked, up to writeTimeout under mu) does
	// not hold up the acks of every other connection.
	fd      int
	fdMu    sync.Mutex
	pending []byte // a partial packet, poller goroutine only
	ended   bool   // connEnded ran
	lost    bool   // connEnded counted it as lost (not closed by the probe)
}

const calibClient = -1 << 20

// connackError is a CONNACK with a non-zero return/reason code.
type connackError struct{ code byte }

func (e connackError) Error() string {
	return fmt.Sprintf("CONNACK return code 0x%02x (%s)", e.code, connackReason(e.code))
}

// noConnackError is a connect whose TCP (and TLS) handshake succeeded
// but whose CONNECT got no CONNACK within wait: the broker, or whatever
// accepted the connection in front of it, takes connections without
// answering MQTT. Not "unreachable".
type noConnackError struct {
	wait time.Duration
	err  error
}

func (e noConnackError) Error() string {
	return fmt.Sprintf("accepted TCP, no CONNACK within %g s (%v)", e.wait.Seconds(), e.err)
}

func (e noConnackError) Unwrap() error { return e.err }

// connackReason names a CONNACK code of MQTT 3.1.1 (1-5) or 5 (>=0x80).
func connackReason(code byte) string {
	switch code {
	case 1, 0x84:
		return "unsupported protocol version"
	case 2, 0x85:
		return "client identifier rejected"
	case 3, 0x88:
		return "server unavailable"
	case 0x89:
		return "server busy"
	case 0x97:
		return "quota exceeded"
	case 0x9F:
		return "connection rate exceeded"
	case 4, 0x86:
		return "bad username or password"
	case 5, 0x87:
		return "not authorised"
	}
	return "refused"
}

// classify names why a connect or a connection failed, for the
// by-reason tables.
func classify(err error) string {
	var ce connackError
	var ne net.Error
	var nc noConnackError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &nc):
		return "no_connack"
	case errors.As(err, &ce):
		switch ce.code {
		case 4, 5, 0x86, 0x87:
			return "not_authorised"
		case 3, 0x88, 0x89, 0x97, 0x9F:
			return "server_unavailable"
		}
		return "rejected"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "fd_limit"
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EADDRINUSE):
		return "no_source_port"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed_by_broker"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "unreachable"
	case errors.Is(err, net.ErrClosed):
		return "closed"
	}
	var te *tls.CertificateVerificationError
	var re tls.RecordHeaderError
	if errors.As(err, &te) || errors.As(err, &re) {
		return "tls"
	}
	return "other"
}

func (r *run) protoVersion() byte {
	if r.cfg.MQTTVersion == "5" {
		return 5
	}
	return 4
}

// dial opens the TCP (and TLS) connection for client number i and runs
// CONNECT -> CONNACK, all within ConnectTimeout.
func (r *run) dial(parent context.Context, i int, clientID string, sub bool) (*conn, error) {
	ctx, cancel := context.WithTimeout(parent, r.cfg.ConnectTimeout)
	defer cancel()
	d := net.Dialer{}
	if len(r.srcIPs) > 0 && i >= 0 {
		d.LocalAddr = &net.TCPAddr{IP: r.srcIPs[i%len(r.srcIPs)]}
	}
	nc, err := d.DialContext(ctx, "tcp", r.addr.hostport)
	if err != nil {
		return nil, err
	}
	if r.tls != nil {
		tc := tls.Client(nc, r.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	size := pubReadBuf
	if sub {
		size = subReadBuf
	}
	c := &conn{r: r, nc: nc, br: bufio.NewReaderSize(nc, size), client: i, sub: sub, fd: -1}
	if sub {
		c.bw = bufio.NewWriterSize(nc, 16<<10)
	}
	dl, _ := ctx.Deadline()
	_ = nc.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	err = c.handshake(clientID)
	if !stop() || err != nil {
		nc.Close()
		if err == nil {
			err = ctx.Err()
		}
		// Timed out with the caller still waiting: the connection's own
		// deadline (ConnectTimeout; its context may not have seen it yet).
		if parent.Err() == nil && classify(err) == "timeout" {
			err = noConnackError{wait: r.cfg.ConnectTimeout, err: err}
		}
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

// handshake writes CONNECT and reads CONNACK.
func (c *conn) handshake(clientID string) error {
	cfg := &c.r.cfg
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: c.r.protoVersion(),
		Connect: packets.ConnectParams{
			ProtocolName:     []byte("MQTT"),
			Clean:            true,
			Keepalive:        uint16(cfg.Keepalive / time.Second),
			ClientIdentifier: clientID,
		},
	}
	if cfg.Username != "" {
		pk.Connect.UsernameFlag = true
		pk.Connect.Username = []byte(cfg.Username)
	}
	if cfg.Password != "" {
		pk.Connect.PasswordFlag = true
		pk.Connect.Password = []byte(cfg.Password)
	}
	if pk.ProtocolVersion == 5 {
		pk.Properties.ReceiveMaximum = 1024
	}
	var b bytes.Buffer
	if err := pk.ConnectEncode(&b); err != nil {
		return err
	}
	if _, err := c.nc.Write(b.Bytes()); err != nil {
		return err
	}
	ack, err := c.readPacket()
	if err != nil {
		return err
	}
	if ack.FixedHeader.Type != packets.Connack {
		return fmt.Errorf("expected CONNACK, got packet type %d", ack.FixedHeader.Type)
	}
	if ack.ReasonCode != 0 {
		return connackError{ack.ReasonCode}
	}
	return nil
}

// readPacket reads and decodes one packet. A PUBLISH payload points into
// c.rbuf and is valid until the next call.
func (c *conn) readPacket() (packets.Packet, error) {
	var pk packets.Packet
	hb, err := c.br.ReadByte()
	if err != nil {
		return pk, err
	}
	if err := pk.FixedHeader.Decode(hb); err != nil {
		return pk, err
	}
	n, _, err := packets.DecodeLength(c.br)
	if err != nil {
		return pk, err
	}
	pk.FixedHeader.Remaining = n
	if cap(c.rbuf) < n {
		c.rbuf = make([]byte, n)
	}
	buf := c.rbuf[:n]
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return pk, err
	}
	if n > 4096 && !c.sub {
		c.rbuf = nil // do not keep a large buffer on an idle publisher
	}
	err = c.decode(&pk, buf)
	return pk, err
}

// decode decodes the body of a packet whose fixed header is in pk.
func (c *conn) decode(pk *packets.Packet, buf []byte) error {
	var err error
	pk.ProtocolVersion = c.r.protoVersion()
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackDecode(buf)
	case packets.Publish:
		err = pk.PublishDecode(buf)
	case packets.Puback:
		err = pk.PubackDecode(buf)
	case packets.Pubrec:
		err = pk.PubrecDecode(buf)
	case packets.Pubrel:
		err = pk.PubrelDecode(buf)
	case packets.Pubcomp:
		err = pk.PubcompDecode(buf)
	case packets.Suback:
		err = pk.SubackDecode(buf)
	case packets.Disconnect:
		err = pk.DisconnectDecode(buf)
	case packets.Pingresp:
	default:
		err = fmt.Errorf("unexpected packet type %d from broker", pk.FixedHeader.Type)
	}
	return err
}

// writeLocked writes b to the connection; c.mu must be held.
func (c *conn) writeLocked(b []byte) error {
	if c.dead {
		return net.ErrClosed
	}
	if c.fd >= 0 {
		return c.writeRawLocked(b)
	}
	var err error
	if c.bw != nil {
		// Buffered (subscriber acks): only a write that makes bufio
		// flush reaches the socket and needs the deadline; setting it
		// per ack costs a runtime timer update per message.
		if len(b) > c.bw.Available() {
			_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		}
		_, err = c.bw.Write(b)
	} else {
		_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err = c.nc.Write(b)
	}
	if err == nil {
		c.lastSent = c.r.now()
	}
	return err
}

// writeRawLocked writes all of b to a polled connection's socket,
// waiting in poll(2) while the send buffer is full, up to writeTimeout;
// c.mu must be held (which keeps c.fd open).
func (c *conn) writeRawLocked(b []byte) error {
	deadline := time.Now().Add(writeTimeout)
	for len(b) > 0 {
		n, err := rawsys.Write(c.fd, b)
		switch {
		case err == nil:
			b = b[n:]
			continue
		case err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			return c.opError(os.NewSyscallError("write", err))
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return c.opError(os.ErrDeadlineExceeded)
		}
		pfd := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLOUT}}
		if _, err := unix.Poll(pfd, int(wait/time.Millisecond)+1); err != nil && err != unix.EINTR {
			return c.opError(os.NewSyscallError("poll", err))
		}
	}
	c.lastSent = c.r.now()
	return nil
}

// opError is err as net.Conn.Write would return it.
func (c *conn) opError(err error) error {
	return &net.OpError{Op: "write", Net: "tcp", Source: c.nc.LocalAddr(), Addr: c.nc.RemoteAddr(), Err: err}
}

// flushLocked flushes the subscriber's write buffer; c.mu must be held.
func (c *conn) flushLocked() error {
	if c.bw == nil || c.bw.Buffered() == 0 || c.dead {
		return nil
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.bw.Flush()
}

// ack writes a PUBACK/PUBREC/PUBREL/PUBCOMP for id.
func (c *conn) ackLocked(typ byte, id uint16) error {
	b := c.ackBuf[:] // a local array would escape: an allocation per ack
	b[0] = typ << 4
	if typ == packets.Pubrel {
		b[0] |= 2 // [MQTT-3.6.1-1]
	}
	b[1] = 2
	binary.BigEndian.PutUint16(b[2:], id)
	return c.writeLocked(b)
}

// ping writes a PINGREQ.
func (c *conn) ping() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.writeLocked([]byte{packets.Pingreq << 4, 0})
	if err == nil {
		err = c.flushLocked()
	}
	return err
}

// subscribe sends SUBSCRIBE for filter at qos; the SUBACK arrives on
// c.suback (read by the reader goroutine).
func (c *conn) subscribe(filter string, qos byte) error {
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
		ProtocolVersion: c.r.protoVersion(),
		PacketID:        1,
		Filters:         packets.Subscriptions{{Filter: filter, Qos: qos}},
	}
	var b bytes.Buffer
	if err := pk.SubscribeEncode(&b); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writeLocked(b.Bytes()); err != nil {
		return err
	}
	return c.flushLocked()
}

// disconnect sends DISCONNECT (best effort, short deadline) and closes.
func (c *conn) disconnect() {
	c.mu.Lock()
	if c.flushTimer != nil {
		c.flushTimer.Stop()
	}
	c.byUs = true
	if !c.dead && c.failErr == nil {
		if c.fd >= 0 {
			_, _ = rawsys.Write(c.fd, []byte{packets.Disconnect << 4, 0}) // non-blocking
		} else {
			_ = c.nc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			_ = c.flushLocked()
			_, _ = c.nc.Write([]byte{packets.Disconnect << 4, 0})
		}
	}
	c.markDeadLocked()
	c.mu.Unlock()
	_ = c.nc.Close()
}

// fail records why a write failed and closes the connection; the
// reader then accounts it as lost with that reason.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.failErr == nil {
		c.failErr = err
	}
	c.markDeadLocked()
	polled := c.polled
	c.mu.Unlock()
	_ = c.nc.Close()
	if polled { // no reader goroutine to notice
		c.r.connEnded(c, err)
	}
}

// close marks c dead and closes the socket (unblocks its reader and any
// writer).
func (c *conn) close() {
	c.mu.Lock()
	c.markDeadLocked()
	c.byUs = true
	c.mu.Unlock()
	_ = c.nc.Close()
}

// markDeadLocked marks c dead and closes a polled connection's socket
// (which takes it out of the poller's epoll set); c.mu must be held.
func (c *conn) markDeadLocked() {
	c.dead = true
	if c.fd >= 0 {
		c.fdMu.Lock()
		_ = unix.Close(c.fd)
		c.fd = -1
		c.fdMu.Unlock()
	}
}

// payload layout (big endian): run tag u32 | publisher u32 | seq u64 |
// scheduled ns since run base i64 | padding.
func putHeader(b []byte, tag uint32, pub int, seq uint32, sched int64) {
	binary.BigEndian.PutUint32(b[0:], tag)
	binary.BigEndian.PutUint32(b[4:], uint32(pub))
	binary.BigEndian.PutUint64(b[8:], uint64(seq))
	binary.BigEndian.PutUint64(b[16:], uint64(sched))
}

func getHeader(b []byte) (tag uint32, pub int, seq uint32, sched int64, ok bool) {
	if len(b) < MinSize {
		return 0, 0, 0, 0, false
	}
	return binary.BigEndian.Uint32(b[0:]), int(binary.BigEndian.Uint32(b[4:])),
		uint32(binary.BigEndian.Uint64(b[8:])), int64(binary.BigEndian.Uint64(b[16:])), true
}

// encoder builds PUBLISH packets; one per scheduler worker. It reuses
// one buffer, so a publish allocates nothing.
type encoder struct {
	buf     []byte
	payload []byte
	// now is when the scheduler dispatched the write (ns since the run
	// base): a polled connection's lastSent, which only keepalive and
	// the retry interval read, without a clock read per publish.
	now int64
}

func newEncoder(size int) *encoder {
	return &encoder{payload: make([]byte, size), buf: make([]byte, 0, size+64)}
}

// appendPublish appends a PUBLISH packet to dst, byte for byte what
// packets.Packet.PublishEncode produces for these fields (no
// properties; MQTT 5 gets an empty property length).
func appendPublish(dst []byte, v5, dup bool, qos byte, topic string, id uint16, payload []byte) []byte {
	rem := 2 + len(topic) + len(payload)
	if qos > 0 {
		rem += 2
	}
	if v5 {
		rem++
	}
	h := packets.Publish<<4 | qos<<1
	if dup {
		h |= 1 << 3
	}
	dst = append(dst, h)
	for {
		b := byte(rem % 128)
		rem /= 128
		if rem > 0 {
			b |= 0x80
		}
		dst = append(dst, b)
		if rem == 0 {
			break
		}
	}
	dst = append(dst, byte(len(topic)>>8), byte(len(topic)))
	dst = append(dst, topic...)
	if qos > 0 {
		dst = append(dst, byte(id>>8), byte(id))
	}
	if v5 {
		dst = append(dst, 0)
	}
	return append(dst, payload...)
}

// encodePublish puts client c's PUBLISH for (seq, sched, id) into e.buf.
func (c *conn) encodePublish(e *encoder, dup bool, seq uint32, sched int64, id uint16) error {
	r := c.r
	qos := byte(r.cfg.QoS)
	if qos > 0 && id == 0 {
		return packets.ErrProtocolViolationNoPacketID // as PublishEncode
	}
	putHeader(e.payload, r.tag, c.client, seq, sched)
	e.buf = appendPublish(e.buf[:0], r.protoVersion() == 5, dup, qos, r.topics[c.client], id, e.payload)
	return nil
}

// writePublishLocked writes e.buf; c.mu must be held. A polled
// connection gets one non-blocking write(2) on its fd, without the
// per-write deadline (which costs a runtime timer update); a short write
// or EAGAIN falls back to net.Conn.Write with the deadline for the rest.
func (c *conn) writePublishLocked(e *encoder) error {
	if c.dead {
		return net.ErrClosed
	}
	if c.fd < 0 {
		return c.writeLocked(e.buf)
	}
	n, err := rawsys.Write(c.fd, e.buf)
	if n < 0 {
		n = 0
	}
	switch {
	case err == nil && n == len(e.buf):
		c.lastSent = e.now
		return nil
	case err != nil && err != unix.EAGAIN && err != unix.EINTR:
		return c.opError(os.NewSyscallError("write", err))
	}
	return c.writeRawLocked(e.buf[n:])
}

// publish writes client c's next message, scheduled at sched. It returns
// false when the connection is gone.
func (c *conn) publish(e *encoder, sched int64) error {
	r := c.r
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return net.ErrClosed
	}
	qos := byte(r.cfg.QoS)
	var id uint16
	if qos > 0 {
		if len(c.inflight) >= 65535 {
			return errors.New("65535 PUBLISH packets in flight without acknowledgement")
		}
		for {
			c.nextID++
			if c.nextID == 0 {
				c.nextID = 1
			}
			if !c.hasID(c.nextID) {
				break
			}
		}
		id = c.nextID
	}
	seq := c.seq
	if err := c.encodePublish(e, false, seq, sched, id); err != nil {
		return err
	}
	if err := c.writePublishLocked(e); err != nil {
		return err
	}
	c.seq++
	now := c.lastSent
	if qos > 0 {
		c.inflight = append(c.inflight, inflight{sched: sched, sent: now, seq: seq, id: id})
		r.inflight.Add(1)
	}
	return nil
}

func (c *conn) hasID(id uint16) bool {
	for i := range c.inflight {
		if c.inflight[i].id == id {
			return true
		}
	}
	return false
}

// take removes and returns the inflight entry for id.
func (c *conn) take(id uint16) (inflight, bool) {
	for i := range c.inflight {
		if c.inflight[i].id == id {
			f := c.inflight[i]
			last := len(c.inflight) - 1
			c.inflight[i] = c.inflight[last]
			c.inflight = c.inflight[:last]
			if len(c.inflight) == 0 && cap(c.inflight) > 16 {
				c.inflight = nil
			}
			return f, true
		}
	}
	return inflight{}, false
}

// resend re-sends with DUP every inflight PUBLISH last sent before
// olderThan (MQTT 3.1.1 retry); it returns how many were re-sent.
func (c *conn) resend(e *encoder, olderThan int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i := range c.inflight {
		f := &c.inflight[i]
		if c.dead || f.sent > olderThan || f.gotRec {
			continue
		}
		if c.encodePublish(e, true, f.seq, f.sched, f.id) != nil || c.writePublishLocked(e) != nil {
			return n
		}
		f.sent = c.lastSent
		n++
	}
	return n
}

// readLoop handles everything the broker sends after CONNACK until the
// connection fails or is closed; it returns the error that ended it.
func (c *conn) readLoop() error {
	if c.sub {
		if tc, ok := c.nc.(*net.TCPConn); ok {
			if rc, err := tc.SyscallConn(); err == nil {
				return c.rawReadLoop(rc)
			}
		}
	}
	for {
		pk, err := c.readPacket()
		if err != nil {
			return err
		}
		if err := c.handle(&pk, c.r.now()); err != nil {
			return err
		}
		if c.bw != nil && c.br.Buffered() == 0 {
			if err := c.flushSoon(); err != nil {
				return err
			}
		}
	}
}

// rawReadLoop is readLoop for a plain-TCP subscriber: it reads the
// socket in one RawConn.Read whose callback handles what each read(2)
// returned and parks only after a short read (the socket was drained, so
// any later data raises a new readiness edge). A net.Conn reader always
// ends a burst with one more read that fails with EAGAIN: one system
// call per wake-up saved.
func (c *conn) rawReadLoop(rc syscall.RawConn) error {
	buf := make([]byte, subReadBuf)
	// Bytes the handshake's bufio.Reader already took from the socket.
	pending := make([]byte, 0, 512)
	if n := c.br.Buffered(); n > 0 {
		b, _ := c.br.Peek(n)
		pending = append(pending, b...)
	}
	c.br = nil
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		for {
			n, e := rawsys.Read(int(fd), buf)
			switch {
			case e == unix.EINTR:
				continue
			case e == unix.EAGAIN:
				return false
			case e != nil:
				rerr = &net.OpError{Op: "read", Net: "tcp", Source: c.nc.LocalAddr(), Addr: c.nc.RemoteAddr(), Err: os.NewSyscallError("read", e)}
				return true
			case n == 0:
				rerr = io.EOF
				return true
			}
			// One clock read per read(2): every packet it returned had
			// arrived by then.
			now := c.r.now()
			data := buf[:n]
			if len(pending) > 0 {
				pending = append(pending, data...)
				data = pending
			}
			for {
				used, perr := c.handleNext(data, now)
				if perr != nil {
					rerr = perr
					return true
				}
				if used == 0 {
					break
				}
				data = data[used:]
			}
			pending = append(pending[:0], data...)
			if n < len(buf) { // drained
				if err := c.flushSoon(); err != nil {
					rerr = err
					return true
				}
				return false
			}
		}
	})
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "raw-read" {
			oe.Op = "read" // as net.Conn.Read names it
		}
		return err
	}
	return rerr
}

// handleNext decodes and handles the first packet in data, which was
// read at now (ns since the run base); used is 0 when it is incomplete.
func (c *conn) handleNext(data []byte, now int64) (used int, err error) {
	if len(data) < 2 {
		return 0, nil
	}
	var pk packets.Packet
	if err := pk.FixedHeader.Decode(data[0]); err != nil {
		return 0, err
	}
	// Remaining length: up to 4 bytes of 7 bits.
	rem, mult, i := 0, 1, 1
	for ; ; i++ {
		if i >= len(data) {
			return 0, nil
		}
		if i > 4 {
			return 0, errors.New("malformed remaining length")
		}
		b := data[i]
		rem += int(b&127) * mult
		mult *= 128
		if b&128 == 0 {
			break
		}
	}
	end := i + 1 + rem
	if end > len(data) {
		return 0, nil
	}
	pk.FixedHeader.Remaining = rem
	if err := c.decode(&pk, data[i+1:end]); err != nil {
		return 0, err
	}
	if err := c.handle(&pk, now); err != nil {
		return 0, err
	}
	return end, nil
}

// ackFlushDelay is how long a subscriber holds its acks to write many in
// one syscall; the broker's inflight window (mosquitto: 1000 by default
// in scripts/mosquitto.sh, 20 by default otherwise) covers it at any
// rate below 20 messages per ms.
const ackFlushDelay = time.Millisecond

// flushSoon writes buffered acks now if many are waiting, else within
// ackFlushDelay (one timer per subscriber).
func (c *conn) flushSoon() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bw.Buffered() == 0 {
		return nil
	}
	if c.bw.Buffered() >= 1024 {
		return c.flushLocked()
	}
	if c.flushArmed {
		return nil
	}
	c.flushArmed = true
	if c.flushTimer == nil {
		c.flushTimer = time.AfterFunc(ackFlushDelay, func() {
			c.mu.Lock()
			c.flushArmed = false
			if err := c.flushLocked(); err != nil && c.failErr == nil {
				c.failErr = err
				_ = c.nc.Close()
			}
			c.mu.Unlock()
		})
	} else {
		c.flushTimer.Reset(ackFlushDelay)
	}
	return nil
}

// handle acts on one packet from the broker, read at now (ns since the
// run base); an error ends the connection. It is long on purpose: one switch
// over the packet types, each case short, so that the per-packet path
// makes no further call to find its case.
func (c *conn) handle(pk *packets.Packet, now int64) error {
	r := c.r
	switch pk.FixedHeader.Type {
	case packets.Puback, packets.Pubcomp:
		c.mu.Lock()
		f, ok := c.take(pk.PacketID)
		c.mu.Unlock()
		if !ok {
			r.strayAcks.Add(1) // a second ack for a re-sent packet
			return nil
		}
		r.inflight.Add(-1)
		// The answer must end the flow the PUBLISH began: PUBACK ends
		// QoS 1 (MQTT 3.1.1 §4.3.2), PUBCOMP ends QoS 2 after PUBREC
		// (§4.3.3). A PUBACK to a QoS 2 PUBLISH is a broker that
		// downgraded it to QoS 1: not acknowledged at the QoS asked, and
		// its one round trip is not a QoS 2 latency.
		if wrong := r.wrongAck(pk.FixedHeader.Type, f.gotRec); wrong != 0 {
			r.protocolFault(wrong, pk.FixedHeader.Type, pk.PacketID)
			return nil
		}
		if pk.ReasonCode >= 0x80 {
			r.ackErrors.Add(1)
			r.censorAck(c.client, f.sched, now)
			return nil
		}
		r.acked.Add(1)
		r.perSec.Load().count(acks, now)
		r.recordAck(c.client, f.sched, now)
	case packets.Pubrec:
		if r.cfg.QoS != 2 { // a QoS 1 PUBLISH is answered with PUBACK only
			c.mu.Lock()
			_, ok := c.take(pk.PacketID)
			c.mu.Unlock()
			if ok {
				r.inflight.Add(-1)
				r.protocolFault(faultWrongType, pk.FixedHeader.Type, pk.PacketID)
			} else {
				r.strayAcks.Add(1)
			}
			return nil
		}
		c.mu.Lock()
		var werr error
		for i := range c.inflight {
			if c.inflight[i].id == pk.PacketID {
				c.inflight[i].gotRec = true
			}
		}
		if pk.ReasonCode >= 0x80 {
			if f, ok := c.take(pk.PacketID); ok {
				r.inflight.Add(-1)
				r.ackErrors.Add(1)
				r.censorAck(c.client, f.sched, now)
			}
		} else {
			werr = c.ackLocked(packets.Pubrel, pk.PacketID)
		}
		c.mu.Unlock()
		return werr
	case packets.Publish:
		r.onMessage(pk.Payload, now, -1-c.client)
		var werr error
		switch pk.FixedHeader.Qos {
		case 1:
			c.mu.Lock()
			werr = c.ackLocked(packets.Puback, pk.PacketID)
			c.mu.Unlock()
		case 2:
			c.mu.Lock()
			werr = c.ackLocked(packets.Pubrec, pk.PacketID)
			c.mu.Unlock()
		}
		return werr
	case packets.Pubrel:
		c.mu.Lock()
		werr := c.ackLocked(packets.Pubcomp, pk.PacketID)
		c.mu.Unlock()
		return werr
	case packets.Suback:
		if c.suback != nil {
			select {
			case c.suback <- append([]byte(nil), pk.ReasonCodes...):
			default:
			}
		}
	case packets.Pingresp:
		if c.pong != nil {
			select {
			case c.pong <- struct{}{}:
			default:
			}
		}
	case packets.Disconnect:
		return fmt.Errorf("broker sent DISCONNECT reason 0x%02x: %w", pk.ReasonCode, io.EOF)
	}
	return nil
}
