package main

import "github.com/spf13/cobra"

// probeSubcommands are added under `hostprep probe` by probe_*.go files.
var probeSubcommands []func() *cobra.Command

func init() {
	addCommand(func() *cobra.Command {
		c := &cobra.Command{
			Use:   "probe",
			Short: "Run a short, calibrated load against MQTT or IoTDB and give a verdict",
		}
		for _, f := range probeSubcommands {
			c.AddCommand(f())
		}
		return c
	})
}
