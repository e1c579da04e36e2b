package simulator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// volumeScenario is one StatefulSet-like pod, db-0, mounting claim
// data-db-0; storage is the scenario's storage section (empty: the pod has
// no volume).
func volumeScenario(t *testing.T, storage string) *scenario.Scenario {
	t.Helper()
	volumes := ""
	if storage != "" {
		volumes = `
        volumes:
          - name: data
            persistentVolumeClaim: {claimName: data-db-0}`
	}
	sc, err := scenario.Parse([]byte(fmt.Sprintf(`
name: volume-zone
seed: 1
duration: 4m
sampleInterval: 10s
world:
  region: us-east-1
  zones: [us-east-1a, us-east-1b, us-east-1c]
  clusterName: lab
  defaultCapacity: 100
nodeClasses:
  - metadata: {name: default}
    spec:
      amiSelectorTerms: [{alias: al2023@latest}]
      role: nodesmith-node-lab
      subnetSelectorTerms: [{tags: {nodesmith.sh/discovery: lab}}]
      securityGroupSelectorTerms: [{tags: {nodesmith.sh/discovery: lab}}]
nodePools:
  - metadata: {name: general}
    spec:
      template:
        spec:
          nodeClassRef: {group: aws.nodesmith.sh, kind: EC2NodeClass, name: default}
          requirements:
            - {key: nodesmith.sh/capacity-type, operator: In, values: [on-demand]}
deployments:
  - name: db
    replicas: [{at: 0s, replicas: 1}]
    template:
      metadata: {labels: {app: db}}
      spec:
        containers:
          - {name: db, image: db, resources: {requests: {cpu: "1", memory: 2Gi}}}%s
%s`, volumes, storage)))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func boundVolumeIn(zone string) string {
	return fmt.Sprintf(`
storageClasses:
  - metadata: {name: gp3}
    provisioner: ebs.csi.aws.com
    volumeBindingMode: WaitForFirstConsumer
persistentVolumes:
  - metadata: {name: pv-data-db-0}
    spec:
      capacity: {storage: 10Gi}
      accessModes: [ReadWriteOnce]
      storageClassName: gp3
      csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0123456789abcdef0}
      nodeAffinity:
        required:
          nodeSelectorTerms:
            - matchExpressions:
                - {key: topology.kubernetes.io/zone, operator: In, values: [%s]}
persistentVolumeClaims:
  - metadata: {name: data-db-0}
    spec:
      storageClassName: gp3
      volumeName: pv-data-db-0
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 10Gi}}
`, zone)
}

// launchZones is the zone of every launch.
func launchZones(res *output.Result) []string {
	var out []string
	for _, l := range res.Launches {
		out = append(out, l.Zone)
	}
	return out
}

// A pod whose volume lives in one zone runs there: the provisioner launches
// its node in the volume's zone (which is not where it would launch
// otherwise), and the simulated kube-scheduler, which checks the volume's
// node affinity as VolumeBinding does, binds it to that node.
func TestPodWithZonalVolumeLandsInItsZone(t *testing.T) {
	free := run(t, volumeScenario(t, ""))
	if len(free.Launches) != 1 {
		t.Fatalf("without a volume: %d launches (%v), want 1", len(free.Launches), launchZones(free))
	}
	// The volume lives in a zone the unpinned pod's node did not go to.
	zone := "us-east-1c"
	if free.Launches[0].Zone == zone {
		zone = "us-east-1b"
	}
	res := run(t, volumeScenario(t, boundVolumeIn(zone)))
	if got := launchZones(res); len(got) != 1 || got[0] != zone {
		t.Fatalf("with a volume in %s: launches in %v, want one in %s", zone, got, zone)
	}
	if !res.FirstPodRunning.Reached {
		t.Fatalf("db-0 never ran on the node launched in %s", zone)
	}
}

// A pod whose claim does not exist is launched for by nobody: kube-scheduler
// cannot bind it, and the provisioner holds it back for its volume.
func TestPodWithMissingClaimGetsNoNode(t *testing.T) {
	storage := strings.Replace(boundVolumeIn("us-east-1b"), "name: data-db-0", "name: data-other", 1)
	res := run(t, volumeScenario(t, storage))
	if len(res.Launches) != 0 {
		t.Fatalf("launches %v for a pod whose claim does not exist, want none", launchZones(res))
	}
	if res.FirstPodRunning.Reached {
		t.Fatal("db-0 ran without its claim")
	}
}
