package metrics

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// terminations are the reasons noted for claims Nodesmith deleted, until
// their finalizer comes off and CountTermination counts them.
type terminations struct {
	mu    sync.Mutex
	notes map[types.UID]string
}

// NoteTermination records why Nodesmith deleted the claim uid (limit_reached,
// insufficient_capacity, launch_timeout, empty, …), for the count its
// termination makes. A later note replaces an earlier one.
func (m *Metrics) NoteTermination(uid types.UID, reason string) {
	m.terminations.mu.Lock()
	defer m.terminations.mu.Unlock()
	if m.terminations.notes == nil {
		m.terminations.notes = map[types.UID]string{}
	}
	m.terminations.notes[uid] = reason
}

// CountTermination counts a claim of pool whose finalizer came off, the one
// place nodeclaims_terminated_total grows for claims: by the reason noted
// for it, else by fallback (what the claim itself says; a note does not
// outlive a restart of the controller).
func (m *Metrics) CountTermination(uid types.UID, pool, fallback string) {
	m.terminations.mu.Lock()
	reason, ok := m.terminations.notes[uid]
	delete(m.terminations.notes, uid)
	m.terminations.mu.Unlock()
	if !ok {
		reason = fallback
	}
	m.NodeClaimsTerminated.WithLabelValues(pool, reason).Inc()
}
