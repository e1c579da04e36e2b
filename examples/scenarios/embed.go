// Package scenarios ships the example simulation scenarios inside the binary,
// so `nodesmith simulate` works with no file at hand.
package scenarios

import "embed"

// Default is the file name of the scenario `nodesmith simulate` runs when no
// --scenario is given.
const Default = "sqs-worker-lab.yaml"

// FS holds every example scenario, by file name.
//
//go:embed *.yaml
var FS embed.FS
