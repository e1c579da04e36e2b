// Package capacitybuffer resolves CapacityBuffers (autoscaling.x-k8s.io,
// the API Cluster Autoscaler and Karpenter read) into virtual pods: it
// reads the buffer's PodTemplate or workload, and for an auto buffer the
// last hour's arrivals of the workload's pods, asks
// provisioning.ResolveBuffer how many chunks to keep, hands the virtual
// pods to the cluster state (state.Cluster.SetBufferPods), writes the
// buffer's status (replicas, template, ReadyForProvisioning) and asks the
// provisioner for a cycle. The provisioner plans room for the pods after
// the real pending ones; the disruption planner keeps that room.
//
// It imports controller-runtime; the rules are pkg/provisioning's.
package capacitybuffer
