package cloudprovider

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// AnnotationLaunchBatch is set on the claim shape List returns for an
// instance that a shared launch (one cloud call for several claims) started
// and that no claim has taken yet: the LaunchKeys of the claims the call was
// made for, space-separated. One of those claims takes the instance on its
// next Create; until then garbage collection must leave it alone.
const AnnotationLaunchBatch = nsv1.Group + "/launch-batch"

// LaunchAttempt is the claim's launch attempt (nsv1.AnnotationLaunchAttempt):
// 0 when unset or not a non-negative number.
func LaunchAttempt(claim *nsv1.NodeClaim) int {
	n, err := strconv.Atoi(claim.Annotations[nsv1.AnnotationLaunchAttempt])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// NextLaunchAttempt raises the claim's launch attempt by one, in memory;
// the caller persists it. Call it only after a LaunchRejectedError.
func NextLaunchAttempt(claim *nsv1.NodeClaim) {
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[nsv1.AnnotationLaunchAttempt] = strconv.Itoa(LaunchAttempt(claim) + 1)
}

// LaunchKey names a claim among the members of a shared launch: 12 hex
// digits of a hash of its UID (of its name when it has none), so a claim
// deleted and created again under the same name is another member.
func LaunchKey(claim *nsv1.NodeClaim) string {
	id := string(claim.UID)
	if id == "" {
		id = "name/" + claim.Name
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

// LaunchedFor reports whether the claim shape of an instance (from List)
// names claim among the members of its shared launch.
func LaunchedFor(instance, claim *nsv1.NodeClaim) bool {
	members := instance.Annotations[AnnotationLaunchBatch]
	if members == "" {
		return false
	}
	key := LaunchKey(claim)
	for _, m := range strings.Fields(members) {
		if m == key {
			return true
		}
	}
	return false
}
