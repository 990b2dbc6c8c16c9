package main

import (
	"strings"

	"github.com/hostprep/hostprep/internal/atomicfile"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/report"
	"github.com/spf13/cobra"
)

func init() {
	addCommand(func() *cobra.Command {
		c := &cobra.Command{
			Use:   "report",
			Short: "Combine the results of many hosts",
		}
		var output, htmlFile string
		merge := &cobra.Command{
			Use:   "merge FILE.json...",
			Short: "Join the JSON results of many hosts into one table, and the shards of a fleet MQTT run into one verdict",
			Long: `Join the results of 'hostprep ready --output json' from many hosts into one
table: host, verdict, failing checks, measured capacity, MQTT p95 and loss,
IoTDB p95, TPS and error rate. Not-ready hosts come first.

Results of 'hostprep probe mqtt --shard K/N --output json' are the shards of
one fleet run: they are merged into one result (summed counts, percentiles
from the merged HdrHistograms, the combined per-second rate) and judged
once against the run's thresholds. Every shard 1..N must be there: a
missing shard is named and fails the fleet; shards of different runs, or
two files for one shard, are refused.

With --html FILE it also writes a self-contained page (inline SVG charts,
nothing fetched). Exit 0 when the report was made (whatever the hosts'
verdicts), 1 when a fleet run's verdict is fail, 2 when a file is
unreadable, not a result, or the shards do not make one run.`,
			Example: `  hostprep report merge reports/*.json
  hostprep report merge --output json --html fleet.html reports/*.json
  hostprep report merge -o junit shards/*.json > fleet.xml`,
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := checkOutput(output, "text", "json", "junit"); err != nil {
					return err
				}
				// The page may not replace one of the results it is made of.
				files := []atomicfile.Out{{Flag: "--html", Path: htmlFile}}
				for _, a := range args {
					files = append(files, atomicfile.Out{Flag: "input", Path: a, Input: true})
				}
				if err := atomicfile.CheckAll(files...); err != nil {
					return err
				}
				fleet, err := report.Merge(args)
				if err != nil {
					return err
				}
				if err := writeReportFile(htmlFile, "--html", fleet.WriteHTML); err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				switch output {
				case "json":
					err = fleet.WriteJSON(out)
				case "junit":
					err = fleet.WriteJUnit(out)
				default:
					err = fleet.WriteText(out)
				}
				if err != nil {
					return err
				}
				return fleetErr(fleet)
			},
		}
		merge.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or junit")
		merge.Flags().StringVar(&htmlFile, "html", "", "also write a self-contained HTML report with charts to `FILE`")
		c.AddCommand(merge)
		return c
	})
}

// fleetErr is exit 1 naming the failed checks when the fleet run failed.
func fleetErr(fleet *report.Fleet) error {
	if !fleet.Failed() {
		return nil
	}
	var failed []string
	for _, ch := range fleet.Run.Checks {
		if ch.Status == verdict.Fail {
			failed = append(failed, ch.ID)
		}
	}
	return exitcode.Failedf("report merge: fleet run %s failed: %s", fleet.Run.RunID, strings.Join(failed, ", "))
}
