// Package scheduler is a deterministic model of kube-scheduler's default
// profile (Kubernetes v1.37) for the simulator: given plain Kubernetes
// objects in its own cache, it decides where the real default scheduler
// would bind a pod, and it models the scheduling queue that decides when.
// The simulator uses it to play kube-scheduler against Nodesmith's plans, so
// it must not import pkg/scheduling (Nodesmith's solver) or any other
// Nodesmith package (the label constants in apis/ would be the one
// exception; none is needed today): a plan is judged by code that did not
// write it. It imports only k8s.io/api, apimachinery, component-helpers,
// klog and k8s.io/utils/clock (TestImportsStayIndependent checks), and was
// written from the upstream plugin sources' behaviour, not copied from
// them.
//
// # What it models
//
// Filters, in the profile's order, stopping at the first that rejects a
// node: NodeUnschedulable, NodeName, TaintToleration (NoSchedule and
// NoExecute; a node whose Ready condition is not True carries the
// not-ready or unreachable taint the node lifecycle controller would add),
// NodeAffinity (nodeSelector and required terms), NodePorts,
// NodeResourcesFit (cpu, memory, ephemeral storage, extended resources and
// the pod count, with requests from component-helpers' PodRequests: init
// and sidecar containers, overhead, pod-level resources),
// VolumeBinding (volumes.go: a bound claim's PersistentVolume node
// affinity, an unbound WaitForFirstConsumer claim's StorageClass
// allowedTopologies; PreFilter rejects a pod whose claim, volume or class
// is missing or whose unbound claim binds Immediately), PodTopologySpread
// (DoNotSchedule: maxSkew, minDomains, nodeAffinityPolicy and
// nodeTaintsPolicy, matchLabelKeys, nodes without the key) and
// InterPodAffinity (required affinity with the first-pod-of-a-group rule,
// required anti-affinity both ways, namespaces and namespaceSelector against
// namespace labels from UpsertNamespace).
//
// Scores with the default weights and each plugin's normalization:
// NodeResourcesFit LeastAllocated (1), NodeResourcesBalancedAllocation (1;
// since v1.36 it scores the change in the node's balance, and it skips
// best-effort pods), TaintToleration PreferNoSchedule (3),
// NodeAffinity preferred terms (2), PodTopologySpread (2, including the
// system default constraints for pods of ReplicaSets, StatefulSets and
// ReplicationControllers that declare none; see defaultSelector for how the
// controller's selector is found) and InterPodAffinity (2, including bound
// pods' terms). ImageLocality scores 0 everywhere.
//
// The cycle itself: nodes are visited in the snapshot's zone-interleaved
// order starting where the previous pod stopped, and filtering stops after
// percentageOfNodesToScore's adaptive number of feasible nodes (all nodes
// below 100), so which nodes a pod is scored against matches kube-scheduler
// as long as nodes are upserted in the order it would have seen them. A pod
// with status.nominatedNodeName is tried on that node first. Ties between
// equally scored nodes go to the lowest node name; kube-scheduler picks one
// at random.
//
// The FitError message is kube-scheduler's up to its "preemption:" part,
// reason for reason; v1.37 reports taints as "node(s) had untolerated
// taint(s)" without naming them.
//
// # Checked against kube-scheduler
//
// The conformance subpackage runs the real kube-scheduler v1.37.2 on a real
// API server and checks a mixed sequence of pods (plain, a ReplicaSet's,
// zone spreading, anti-affinity, preferred affinity, node selectors,
// tolerations, host ports, best-effort) lands where the model ranks best
// and that the failures read the same. VolumeBinding is not in that
// sequence: its messages follow the plugin's sources. It found the v1.36
// BalancedAllocation change and the v1.37 taint message, which the plugin
// sources this model was first written from did not have.
//
// # What it leaves out
//
// Most of volumes: VolumeBinding neither binds unbound claims to existing
// volumes nor provisions (no PV controller or CSI provisioner plays here,
// so a WaitForFirstConsumer claim stays unbound and only its class's
// topology counts) and checks no capacity; VolumeZone, VolumeRestrictions
// and NodeVolumeLimits are not modelled;
// dynamic resource allocation, preemption (no PostFilter: a pod that fits
// nowhere stays pending, and the FitError message has no "preemption:"
// part) and the effect of other pods' nominations, Services in the default
// spreading selector, queueing hints (MoveAll requeues every unschedulable
// pod), opportunistic batching (on by default since v1.35: when a pod
// identical to the previous one finds the node that pod took now full,
// kube-scheduler takes the next node of the previous ranking instead of
// running a cycle; this model runs the cycle, which agrees unless
// normalization shifts without the filled node or, at 100 nodes and more,
// a different window of nodes is sampled), in-place resize status, the NodeDeclaredFeatures filter, toleration comparison operators
// (alpha) and image locality. Extenders and multiple profiles do not exist
// here.
//
// # Cost
//
// Per pod the work is O(nodes): pods without affinity or spreading touch
// each node once to filter and the feasible ones once to score. Affinity
// terms and spread selectors are counted per node incrementally (a counter
// per distinct rule, found through an equality requirement of its
// selector), and identical terms carried by bound pods are grouped, so
// neither re-reads all pods per cycle.
package scheduler
