package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/loadprobe/probes"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune"
	"github.com/spf13/cobra"
)

func init() {
	addCommand(func() *cobra.Command {
		c := &cobra.Command{
			Use:   "profiles",
			Short: "List, show and validate tuning profiles",
			Long: `A profile is a YAML file (or a built-in name) holding sysctl keys with a
mode (exact, at-least, at-most), nofile limits, systemd limits, ports to keep
out of the ephemeral range, a preflight target and probes. See
docs/profiles.md for the format.`,
		}
		c.AddCommand(profilesListCmd(), profilesShowCmd(), profilesValidateCmd())
		return c
	})
}

func profilesListCmd() *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:     "list",
		Short:   "List the built-in profiles",
		Example: "  hostprep profiles list\n  hostprep profiles list --output json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text", "json"); err != nil {
				return err
			}
			infos, err := profiles.Builtins()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				return profilesWriteJSON(w, infos)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDESCRIPTION")
			for _, i := range infos {
				fmt.Fprintf(tw, "%s\t%s\n", i.Name, i.Summary)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return c
}

func profilesShowCmd() *cobra.Command {
	var (
		output string
		raw    bool
		sets   []string
	)
	c := &cobra.Command{
		Use:   "show NAME|FILE",
		Short: "Print a profile with its includes and --set overrides resolved",
		Long: `Print the resolved profile (includes merged, --set applied, validated) as
YAML, or as JSON with --output json. --raw prints the file as written,
comments and all (for a built-in: the embedded YAML).`,
		Example: "  hostprep profiles show sys-tune\n  hostprep profiles show --raw mqtt-broker-1m\n  hostprep profiles show ./my.yaml --set net.core.somaxconn=65535 --output json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text", "json"); err != nil {
				return err
			}
			if raw {
				if output != "text" || len(sets) > 0 {
					return exitcode.BadInputf("--raw prints the file as written; drop --output json and --set, or drop --raw")
				}
				src, err := profiles.Source(args[0])
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(src)
				return err
			}
			p, err := profiles.Load(args[0], sets)
			if err != nil {
				return err
			}
			var out []byte
			if output == "json" {
				out, err = p.JSONBytes()
				out = append(out, '\n')
			} else {
				out, err = p.YAMLBytes()
			}
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "text", "output format: text (YAML) or json")
	c.Flags().BoolVar(&raw, "raw", false, "print the profile file as written, with its comments")
	c.Flags().StringArrayVar(&sets, "set", nil, "override one key, key=value (repeatable), e.g. net.core.somaxconn=65535")
	return c
}

// validateResult is one line of `profiles validate --output json`.
type validateResult struct {
	File  string `json:"file"`
	Name  string `json:"name,omitempty"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Problems lists every problem found, one line each (Error is the
	// first, with how many more).
	Problems []string `json:"problems,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Kernel says how the running kernel judged each sysctl value: by a
	// trial in a scratch network namespace, or by hostprep's table.
	Kernel *tune.KernelCheck `json:"kernel_check,omitempty"`
	Notes  []string          `json:"notes,omitempty"`
}

func profilesValidateCmd() *cobra.Command {
	var (
		output string
		sets   []string
	)
	c := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check profiles without touching the host (exit 0 valid, 2 invalid)",
		Long: `Load each profile (a file or a built-in name), resolve its includes, apply
--set and run the static checks: YAML strictness, modes, multi-value fields,
port range, nofile against fs.nr_open and fs.file-max, preflight target,
probes. Then each sysctl value is written, as tune plan does, in a scratch
network namespace, so the running kernel itself accepts or refuses it
(root; elsewhere, and for global keys, hostprep's table of bounds is used,
and a note says so). Other host-dependent checks (keys unknown to this
kernel, the host's fs.nr_open, listening ports) are done by
'hostprep tune plan'.

Reference: docs/profiles.md.`,
		Example: "  hostprep profiles validate ./broker.yaml\n  hostprep profiles validate --output json a.yaml b.yaml",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text", "json"); err != nil {
				return err
			}
			results, problems := validateProfiles(args, sets)
			w := cmd.OutOrStdout()
			if output == "json" {
				if err := profilesWriteJSON(w, results); err != nil {
					return err
				}
			} else {
				for _, r := range results {
					if !r.OK {
						continue
					}
					fmt.Fprintf(w, "%s: ok (profile %s)\n", r.File, r.Name)
					for _, warn := range r.Warnings {
						fmt.Fprintf(w, "%s: warning: %s\n", r.File, warn)
					}
					for _, n := range r.Notes {
						fmt.Fprintf(w, "%s: note: %s\n", r.File, n)
					}
				}
			}
			if len(problems) == 0 {
				return nil
			}
			if output == "json" { // the results say it all; the error is the first file's
				for _, r := range results {
					if !r.OK {
						return exitcode.BadInputf("%s", r.Error)
					}
				}
			}
			// Text: every problem of every file on a line of its own, the
			// last one as the command's error (exit 2).
			if output == "text" {
				for _, pr := range problems[:len(problems)-1] {
					fmt.Fprintln(cmd.ErrOrStderr(), "hostprep: "+pr)
				}
			}
			return exitcode.BadInputf("%s", problems[len(problems)-1])
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	c.Flags().StringArrayVar(&sets, "set", nil, "override one key, key=value (repeatable), before validating")
	return c
}

// validateProfiles loads and checks each profile ref (a file or a
// built-in name) with sets applied: the profile's own rules, then the
// probes' (each registered probe's CheckProfile). It returns a result per
// ref and every problem found, one line each, in order.
func validateProfiles(refs, sets []string) ([]validateResult, []string) {
	var results []validateResult
	var problems []string
	for _, ref := range refs {
		r := validateResult{File: ref}
		p, err := profiles.Load(ref, sets)
		for _, pr := range probes.All {
			if err == nil {
				err = pr.CheckProfile(p)
			}
		}
		if err == nil {
			r.Kernel, r.Notes, err = tune.JudgeProfile(p)
		}
		if err != nil {
			r.Error, r.Problems = err.Error(), []string{err.Error()}
			if ve := (*profiles.ValidationError)(nil); errors.As(err, &ve) {
				r.Problems = ve.Problems
			}
			problems = append(problems, r.Problems...)
		} else {
			r.OK, r.Name, r.Warnings = true, p.Name, p.Warnings()
		}
		results = append(results, r)
	}
	return results, problems
}

func profilesWriteJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
