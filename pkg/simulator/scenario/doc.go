// Package scenario is the file format of a simulation: the simulated AWS
// (region, zones, capacity pools, boot delay), the cluster (NodePools and
// EC2NodeClasses as the real API types, system nodes, DaemonSets), the
// workloads over time and the events injected at given times.
//
// It only parses, defaults and validates; it imports no simulator, no cloud
// and no client. docs/scenarios.md documents the format.
package scenario
