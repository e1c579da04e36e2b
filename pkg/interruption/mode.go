package interruption

import "fmt"

// RebalanceMode says what a rebalance recommendation does.
type RebalanceMode string

const (
	// RebalanceOff records an Event and nothing else.
	RebalanceOff RebalanceMode = "off"
	// RebalancePrespin marks the claim Disrupting: its node takes no new
	// pods and the replacement for its pods is launched now, but the node
	// is only drained when an interruption warning (or other notice)
	// follows, which then finds the replacement ready. Until then the
	// replacement is held for those pods (their nominations are renewed)
	// and neither it nor the node is consolidated: one replacement per
	// recommendation, however long no notice comes.
	RebalancePrespin RebalanceMode = "prespin"
	// RebalanceDrain also drains the node once its replacement is ready
	// and the NodePool's disruption budget allows (reason Rebalance).
	RebalanceDrain RebalanceMode = "drain"
)

// DefaultRebalanceMode is prespin: a rebalance recommendation is often not
// followed by an interruption, so the node keeps its pods, but capacity is
// ready if it is.
const DefaultRebalanceMode = RebalancePrespin

// ParseRebalanceMode reads a flag value.
func ParseRebalanceMode(s string) (RebalanceMode, error) {
	switch m := RebalanceMode(s); m {
	case RebalanceOff, RebalancePrespin, RebalanceDrain:
		return m, nil
	}
	return "", fmt.Errorf("rebalance mode %q: want off, prespin or drain", s)
}
