// Command nodesmith is Nodesmith's command-line tool. Today it has one
// subcommand, simulate, which replays a scenario through the product's own
// decision code in virtual time.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "nodesmith",
		Short:         "Just-in-time node provisioning for Kubernetes on AWS",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newSimulateCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "nodesmith:", err)
		os.Exit(1)
	}
}
