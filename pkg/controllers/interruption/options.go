package interruption

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

// Defaults of the queue settings (and of cmd/controller's flags).
const (
	// DefaultWaitTime is SQS's longest long poll.
	DefaultWaitTime = 20 * time.Second
	// DefaultMaxMessages is the most one ReceiveMessage returns.
	DefaultMaxMessages = 10
	// DefaultWorkers handle a batch's instances in parallel.
	DefaultWorkers = 10
	// DefaultVisibilityTimeout hides a received message; one whose action
	// failed is received again after it.
	DefaultVisibilityTimeout = 20 * time.Second
	// DefaultIdlePoll is the pause after an empty receive when WaitTime is 0.
	DefaultIdlePoll = time.Second
)

// Backoff bounds after a failed queue call.
const (
	backoffBase = time.Second
	backoffMax  = 2 * time.Minute
)

// Options tune the queue.
type Options struct {
	// Queue is the queue's URL, or its name (looked up with GetQueueUrl).
	Queue string
	// WaitTime is the long-poll wait of a receive, 0–20 s. 0 returns at
	// once, for drivers that step a clock.
	WaitTime time.Duration
	// IdlePoll is when the next step is due after an empty receive with
	// WaitTime 0 (with a long poll the next step follows at once).
	IdlePoll time.Duration
	// MaxMessages per receive, 1–10.
	MaxMessages int
	// VisibilityTimeout of received messages, at least 1 s.
	VisibilityTimeout time.Duration
	// Workers bound the instances handled at once (≥ 1).
	Workers int
	// Rebalance is what a rebalance recommendation does.
	Rebalance interruption.RebalanceMode
	// Self is the controller's own Pod; when set, queue problems are an
	// Event and a condition on it.
	Self *types.NamespacedName
}

// DefaultOptions are the production settings for queue.
func DefaultOptions(queue string) Options {
	return Options{Queue: queue, WaitTime: DefaultWaitTime, IdlePoll: DefaultIdlePoll, MaxMessages: DefaultMaxMessages,
		VisibilityTimeout: DefaultVisibilityTimeout, Workers: DefaultWorkers, Rebalance: interruption.DefaultRebalanceMode}
}

// Validate says what is wrong with o.
func (o Options) Validate() error {
	switch {
	case o.Queue == "":
		return fmt.Errorf("no interruption queue")
	case o.WaitTime < 0 || o.WaitTime > 20*time.Second || o.WaitTime%time.Second != 0:
		return fmt.Errorf("interruption queue wait time %s: want whole seconds from 0s to 20s", o.WaitTime)
	case o.MaxMessages < 1 || o.MaxMessages > 10:
		return fmt.Errorf("interruption queue batch of %d messages: want 1 to 10", o.MaxMessages)
	case o.VisibilityTimeout < time.Second || o.VisibilityTimeout%time.Second != 0:
		return fmt.Errorf("interruption queue visibility timeout %s: want whole seconds, at least 1s", o.VisibilityTimeout)
	case o.Workers < 1:
		return fmt.Errorf("interruption workers %d: want at least 1", o.Workers)
	case o.IdlePoll <= 0:
		return fmt.Errorf("interruption idle poll %s: want a positive duration", o.IdlePoll)
	}
	_, err := interruption.ParseRebalanceMode(string(o.Rebalance))
	return err
}

// Deps are the collaborators both controllers of the package share.
type Deps struct {
	// Kube reads through the manager's cache (with state's field indexes) and writes.
	Kube client.Client
	// Fresh reads the claims a notice changes straight from the API server
	// (the manager's APIReader), so a duplicate notice sees the first's
	// writes; Kube when nil.
	Fresh    client.Reader
	Clock    clock.Clock
	Recorder *events.Recorder
	Metrics  *metrics.Metrics
	// Unavailable is the ICE cache an interrupted spot offering is marked in; optional.
	Unavailable *catalog.UnavailableOfferings
	// History remembers interrupted spot pools for the launch path's risk; optional.
	History *catalog.InterruptionHistory
	// Wake asks the disruption executor for a step now, to plan and launch
	// the marked node's replacements (key names the asker); optional.
	Wake func(key string)
}

func (d Deps) fresh() client.Reader {
	if d.Fresh != nil {
		return d.Fresh
	}
	return d.Kube
}

func (d Deps) wake(key string) {
	if d.Wake != nil {
		d.Wake(key)
	}
}
