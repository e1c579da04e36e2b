package provisioning

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Reasons of a NodePool's ValidationSucceeded condition when it is False.
const (
	ReasonConflictingRequirements = "ConflictingRequirements"
	ReasonNoInstanceTypeMatches   = "NoInstanceTypeMatches"
	ReasonMinValuesUnsatisfiable  = "MinValuesUnsatisfiable"
)

// ValidatePool checks what the API server cannot: that the pool's
// requirements and template labels agree with each other and that the
// instance types its node class offers (types: the cloud's view for the
// pool, offerings in the node class's zones) can satisfy them, minValues
// included. Availability (the ICE cache) is ignored: a pool is not invalid
// because a pool ran dry. Requirements on keys no instance type labels
// (custom keys) constrain the node's labels only and are not checked
// against types. It returns the reason and message of a False
// ValidationSucceeded, or two empty strings.
func ValidatePool(pool *nsv1.NodePool, types []*catalog.InstanceType) (reason, message string) {
	reqs := scheduling.FromAPI(pool.Spec.Template.Spec.Requirements)
	labels := pool.Spec.Template.ObjectMeta.Labels
	// A template label is a value the node will carry: it must be one the
	// requirement on its key allows (a key the requirements leave alone is
	// the pool's own, like a fleet label pods select on).
	for _, k := range sortedKeys(boolKeys(labels)) {
		if r := reqs.Get(k); r != nil && !r.Matches(labels[k], true) {
			return ReasonConflictingRequirements, fmt.Sprintf("the template's label %s=%s contradicts its requirement %s", k, labels[k], r)
		}
	}
	if err := reqs.Satisfiable(); err != nil {
		return ReasonConflictingRequirements, err.Error()
	}
	// Keys an offering labels: the types' own, its zone and capacity type.
	typeKeys := map[string]bool{corev1.LabelTopologyZone: true, nsv1.LabelCapacityType: true}
	for _, it := range types {
		for k := range it.Labels {
			typeKeys[k] = true
		}
	}
	checked := scheduling.Requirements{}
	for _, k := range reqs.Keys() {
		if typeKeys[k] {
			checked.Add(reqs.Get(k))
		}
	}
	// An offering's labels are its type's plus its zone and capacity type:
	// the type's part is matched once per type, the offering's per
	// offering (a pool is validated on every claim change, against
	// hundreds of types).
	ofType, ofOffering := scheduling.Requirements{}, scheduling.Requirements{}
	for k, r := range checked {
		if k == corev1.LabelTopologyZone || k == nsv1.LabelCapacityType {
			ofOffering[k] = r
		} else {
			ofType[k] = r
		}
	}
	seen := map[string]map[string]bool{}
	note := func(k, v string) {
		if seen[k] == nil {
			seen[k] = map[string]bool{}
		}
		seen[k][v] = true
	}
	matched := 0
	offering := map[string]string{}
	for _, it := range types {
		if !ofType.Matches(it.Labels) {
			continue
		}
		for _, o := range it.Offerings {
			setOrDelete(offering, corev1.LabelTopologyZone, o.Zone)
			setOrDelete(offering, nsv1.LabelCapacityType, o.CapacityType)
			if !ofOffering.Matches(offering) {
				continue
			}
			matched++
			for k := range ofType {
				note(k, it.Labels[k])
			}
			for k := range ofOffering {
				note(k, offering[k])
			}
		}
	}
	if matched == 0 {
		return ReasonNoInstanceTypeMatches, fmt.Sprintf("none of the %d instance types the node class offers in its zones satisfies the requirements %s",
			len(types), describe(checked))
	}
	for _, k := range reqs.Keys() {
		r := reqs.Get(k)
		if r.MinValues == nil || !typeKeys[k] {
			continue
		}
		if n := len(seen[k]); n < *r.MinValues {
			return ReasonMinValuesUnsatisfiable, fmt.Sprintf("requirement %s wants minValues %d, but the instance types that satisfy the requirements span only %d value(s): %s",
				k, *r.MinValues, n, strings.Join(sortedKeys(seen[k]), ", "))
		}
	}
	return "", ""
}

func setOrDelete(m map[string]string, k, v string) {
	if v == "" {
		delete(m, k)
		return
	}
	m[k] = v
}

func describe(rs scheduling.Requirements) string {
	if len(rs) == 0 {
		return "(none)"
	}
	return rs.String()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func boolKeys(m map[string]string) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
