// Package output renders a simulation's result: the timeline as CSV, the
// chart as PNG, the Markdown report and the short stdout summary.
//
// It formats values the simulator measured; it decides nothing and imports
// neither the simulator's engine nor any cloud or client package.
package output
