package main

import (
	"github.com/hostprep/hostprep/internal/atomicfile"
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
			Short: "Join the JSON results of `hostprep ready` from many hosts into one table",
			Long: `Join the results of 'hostprep ready --output json' from many hosts into one
table: host, verdict, failing checks, measured capacity, MQTT p95 and loss,
IoTDB p95, TPS and error rate. Not-ready hosts come first. With --html FILE
it also writes a self-contained page (inline SVG charts, nothing fetched).
Exit 0 when the report was made (whatever the hosts' verdicts), 2 when a
file is unreadable or not a ready result.`,
			Example: `  hostprep report merge reports/*.json
  hostprep report merge --output json --html fleet.html reports/*.json`,
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := checkOutput(output, "text", "json"); err != nil {
					return err
				}
				if err := atomicfile.Check("--html", htmlFile); err != nil {
					return err
				}
				fleet, err := report.Merge(args)
				if err != nil {
					return err
				}
				if err := writeReportFile(htmlFile, "--html", fleet.WriteHTML); err != nil {
					return err
				}
				if output == "json" {
					return fleet.WriteJSON(cmd.OutOrStdout())
				}
				return fleet.WriteText(cmd.OutOrStdout())
			},
		}
		merge.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
		merge.Flags().StringVar(&htmlFile, "html", "", "also write a self-contained HTML report with charts to `FILE`")
		c.AddCommand(merge)
		return c
	})
}
