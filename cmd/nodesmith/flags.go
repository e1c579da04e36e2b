package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/nodesmith/nodesmith/pkg/kubesnapshot"
	"github.com/nodesmith/nodesmith/pkg/whatif"
)

// Output formats; each command lists those it supports.
const (
	outTable = "table"
	outYAML  = "yaml"
	outJSON  = "json"
)

// outputFlag is -o/--output, checked against the formats a command has.
type outputFlag struct {
	value   string
	allowed []string
}

func addOutputFlag(cmd *cobra.Command, def string, allowed ...string) *outputFlag {
	o := &outputFlag{value: def, allowed: allowed}
	cmd.Flags().StringVarP(&o.value, "output", "o", def, "output format: "+strings.Join(allowed, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return allowed, cobra.ShellCompDirectiveNoFileComp
	})
	return o
}

func (o *outputFlag) check() error {
	for _, a := range o.allowed {
		if o.value == a {
			return nil
		}
	}
	return fmt.Errorf("--output %q: want one of %s", o.value, strings.Join(o.allowed, ", "))
}

// writeData writes v as YAML or JSON.
func writeData(w io.Writer, format string, v any) error {
	switch format {
	case outJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case outYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("no %s output here", format)
}

// clusterFlags pick where a command reads the cluster from.
type clusterFlags struct {
	snapshot    string
	fromCluster bool
	kubeconfig  string
	context     string
	unavailable []string
}

func addClusterFlags(cmd *cobra.Command, withSnapshot bool) *clusterFlags {
	f := &clusterFlags{}
	if withSnapshot {
		cmd.Flags().StringVar(&f.snapshot, "snapshot", "", "read the cluster from a file written by nodesmith snapshot instead of the kubeconfig")
		cmd.Flags().BoolVar(&f.fromCluster, "from-cluster", false, "read the cluster through the kubeconfig (the default without --snapshot)")
		cmd.MarkFlagsMutuallyExclusive("snapshot", "from-cluster")
		_ = cmd.MarkFlagFilename("snapshot", "yaml", "yml", "json")
		cmd.Flags().StringArrayVar(&f.unavailable, "unavailable", nil,
			"treat offerings as out of capacity, TYPE:ZONE:CAPACITY-TYPE with * for any (m5.large:*:spot); repeatable")
	}
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&f.context, "context", "", "kubeconfig context (default the current one)")
	return f
}

// load reads the snapshot file, or takes a snapshot of the cluster now.
func (f *clusterFlags) load(ctx context.Context, stderr io.Writer) (*whatif.Snapshot, error) {
	var snap *whatif.Snapshot
	if f.snapshot != "" {
		fh, err := os.Open(f.snapshot)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		if snap, err = whatif.ReadSnapshot(fh); err != nil {
			return nil, fmt.Errorf("%s: %w", f.snapshot, err)
		}
	} else {
		c, name, err := kubesnapshot.Connect(f.kubeconfig, f.context)
		if err != nil {
			return nil, err
		}
		s, warnings, err := kubesnapshot.Take(ctx, c, name, time.Now())
		if err != nil {
			return nil, fmt.Errorf("reading context %s: %w", name, err)
		}
		for _, w := range warnings {
			fmt.Fprintln(stderr, "warning:", w)
		}
		snap = s
	}
	for _, u := range f.unavailable {
		o, err := parseOffering(u)
		if err != nil {
			return nil, err
		}
		snap.UnavailableOfferings = append(snap.UnavailableOfferings, o)
	}
	return snap, nil
}

func parseOffering(s string) (whatif.Offering, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return whatif.Offering{}, fmt.Errorf("--unavailable %q: want TYPE:ZONE:CAPACITY-TYPE, * for any", s)
	}
	for i := range parts {
		if parts[i] == "*" {
			parts[i] = ""
		}
	}
	return whatif.Offering{InstanceType: parts[0], Zone: parts[1], CapacityType: parts[2]}, nil
}
