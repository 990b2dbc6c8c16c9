package main

import (
	"os"

	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/probes"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func init() {
	addCommand(func() *cobra.Command {
		c := &cobra.Command{
			Use:   "probe",
			Short: "Run a short, calibrated load against MQTT or IoTDB and give a verdict",
		}
		for _, p := range probes.All {
			c.AddCommand(newProbeCmd(p))
		}
		return c
	})
}

// newProbeCmd builds `hostprep probe NAME` for probe p: its help and own
// flags from p.Command(), the flags every probe command has (probeFlags),
// and runProbe as its RunE.
func newProbeCmd(p loadprobe.Probe) *cobra.Command {
	pc := p.Command()
	help := pc.Help()
	var pf probeFlags
	c := &cobra.Command{
		Use:     p.Name(),
		Short:   help.Short,
		Long:    help.Long,
		Example: help.Example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProbe(cmd, &pf, p, pc)
		},
	}
	fl := c.Flags()
	fl.StringVar(&pf.profile, "profile", "", "take the load and thresholds from this profile's probe."+p.Name()+" section (built-in name or file); flags given explicitly win")
	pc.Flags(fl)
	fl.StringVar(&pf.passwordFile, "password-file", "", help.PasswordFile)
	fl.StringVar(&pf.shard, "shard", "", help.Shard)
	fl.StringVarP(&pf.outs.Format, "output", "o", "text", "result format: text or json")
	fl.StringVar(&pf.outs.CSV, "csv", "", help.CSV)
	fl.StringVar(&pf.outs.HTML, "html", "", help.HTML)
	return c
}

// stderrIsTTY says whether progress may be one updating line.
func stderrIsTTY() bool { return term.IsTerminal(int(os.Stderr.Fd())) }
