package simulator

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// FreshPlan is what the product's solver would launch for pods on an empty
// cluster: every pool as written (no usage: nothing launched yet) with the
// given instance types, no existing node, the DaemonSets' overhead on
// every new node. It is the "fresh plan" each cost comparison of the
// simulator measures a fleet against (TestConsolidationScaleDown, the
// hourly table's fresh cost); its cost is Plan.Cost, each claim at its
// cheapest option, which is what the simulated AWS's price-capacity-
// optimized allocation launches when every pool is equally deep.
func FreshPlan(pods []*corev1.Pod, pools []*nsv1.NodePool, types []*catalog.InstanceType, daemons []*appsv1.DaemonSet) (*scheduling.Plan, error) {
	var sps []*scheduling.NodePool
	for _, np := range pools {
		np = np.DeepCopy()
		np.Status = nsv1.NodePoolStatus{}
		sp := scheduling.NodePoolFromAPI(np, types)
		sp.Labels[nsv1.LabelNodePool] = np.Name
		sps = append(sps, sp)
	}
	return scheduling.Solve(scheduling.Input{Pods: pods, NodePools: sps, DaemonSets: daemons})
}
