package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/plan"
)

// Launching each claim once.
//
// A launch can lose its answer (the SDK gives up on a timeout, the
// controller is killed while CreateFleet runs, the leader fails over) after
// EC2 started the instance. Two things keep the retry from launching again:
//
//   - Before any CreateFleet, CreateAll looks for instances earlier calls
//     started for its claims (findLaunched) and takes them instead. A claim's
//     own instance carries the nodesmith.sh/nodeclaim tag from the moment it
//     exists, because a call for one claim tags it at launch.
//   - The ClientToken is derived from the claim's UID, its launch attempt
//     (nsv1.AnnotationLaunchAttempt, raised by the caller only after the
//     cloud rejected a launch) and the fallback round within one Create; it
//     no longer mixes in the request or the ICE cache, so a retry that
//     reaches EC2 before the lookup can see the instance (EC2 is eventually
//     consistent) gets the first call's answer, and one that asks for
//     something else gets IdempotentParameterMismatch instead of a second
//     instance. A mismatch with no instance found means the earlier call
//     launched nothing: the launch is rejected and the next attempt gets a
//     new token.
//
// Merged calls. CreateAll still makes one CreateFleet for claims whose
// requests are identical (TotalTargetCapacity N), because in a scale-up the
// provisioner's cycle often holds several identical claims and each call
// counts against EC2's CreateFleet rate limit; but such a call cannot tag
// each instance with its own claim, and a token shared by N claims cannot
// be re-derived by one of them alone after a crash. So instead of splitting
// the calls (N calls, N tokens), a merged call tags every instance at launch
// with the launch keys of all its claims (awsv1.TagLaunchBatch,
// cloudprovider.LaunchKey, at most maxBatch keys so they fit one tag value),
// writes each claim's own tag afterwards, and a claim records an instance
// only once its own tag is written. After a lost answer or a crash between
// CreateFleet and the tagging, a claim that finds no instance with its name
// takes an instance of a batch that names it and that no claim has tagged
// yet (one at a time under adoptMu, remembering what it handed out in case
// DescribeInstances lags a fresh tag), tags it, and uses it. Garbage
// collection leaves such an instance alone while a claim it names still
// waits for an instance (cloudprovider.LaunchedFor).

// maxBatch is how many claims one CreateFleet call may serve: the launch
// keys (12 hex digits and a space each) that fit in one 256-character tag value.
const maxBatch = 19

// assignedTTL is how long the provider remembers which claim it handed an
// instance to, covering DescribeInstances lagging behind a fresh tag.
const assignedTTL = 10 * time.Minute

// launchToken is a claim's ClientToken for one CreateFleet round of one
// launch attempt.
func launchToken(claim *nsv1.NodeClaim, round int) string {
	id := string(claim.UID)
	if id == "" {
		id = "name/" + claim.Name
	}
	return token(id + "/" + strconv.Itoa(cloudprovider.LaunchAttempt(claim)) + "/" + strconv.Itoa(round))
}

// batchToken is the ClientToken of a call for several claims: stable for the
// same members, so the SDK's retries of the call reuse it.
func batchToken(tokens []string) string {
	sorted := append([]string(nil), tokens...)
	sort.Strings(sorted)
	return token(strings.Join(sorted, ","))
}

func token(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "nodesmith-" + hex.EncodeToString(sum[:20])
}

// adoption is what findLaunched found for one claim: an instance an earlier
// call launched for it, or the error that stopped the search.
type adoption struct {
	instance *Instance
	err      error
}

// findLaunched looks for the instances earlier launches started for the
// claims: one tagged with the claim's name, else an untagged one of a
// merged launch that names the claim, which it then tags. Without an
// answer from EC2 no claim may launch (it could launch twice), so a failed
// lookup is every claim's error.
func (p *Provider) findLaunched(ctx context.Context, ls []*launch) []adoption {
	out := make([]adoption, len(ls))
	if len(ls) == 0 {
		return out
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.claim.Name
	}
	byName, err := p.describeByTag(ctx, awsv1.TagNodeClaim, names)
	if err != nil {
		return failAll(out, fmt.Errorf("looking for instances launched earlier: %w", err))
	}
	own := map[string]Instance{}
	for _, in := range byName {
		if _, ok := own[in.ClaimName()]; !ok { // sorted by id: the lowest wins, GC takes the rest
			own[in.ClaimName()] = in
		}
	}
	var patterns []string
	for _, l := range ls {
		if _, ok := own[l.claim.Name]; !ok {
			patterns = append(patterns, "*"+cloudprovider.LaunchKey(l.claim)+"*")
		}
	}
	var batched []Instance
	if len(patterns) > 0 {
		if batched, err = p.describeByTag(ctx, awsv1.TagLaunchBatch, patterns); err != nil {
			return failAll(out, fmt.Errorf("looking for instances of merged launches: %w", err))
		}
	}
	p.adoptMu.Lock()
	defer p.adoptMu.Unlock()
	p.pruneAssignedLocked()
	for i, l := range ls {
		if in, ok := own[l.claim.Name]; ok {
			out[i].instance = &in
			continue
		}
		in := p.unclaimedLocked(batched, l.claim)
		if in == nil {
			continue
		}
		if err := p.tagClaim(ctx, in.ID, l.claim.Name); err != nil {
			out[i].err = err
			continue
		}
		p.assignLocked(in.ID, l.claim.Name)
		out[i].instance = in
	}
	return out
}

func failAll(out []adoption, err error) []adoption {
	for i := range out {
		out[i].err = err
	}
	return out
}

// unclaimedLocked is the first instance of a merged launch naming claim
// that carries no claim's tag and was not handed to another claim.
func (p *Provider) unclaimedLocked(batched []Instance, claim *nsv1.NodeClaim) *Instance {
	key := cloudprovider.LaunchKey(claim)
	for i := range batched {
		in := batched[i]
		if in.ClaimName() != "" || !containsField(in.Tags[awsv1.TagLaunchBatch], key) {
			continue
		}
		if a, ok := p.assigned[in.ID]; ok && a.claim != claim.Name {
			continue
		}
		return &in
	}
	return nil
}

func containsField(s, f string) bool {
	for _, x := range strings.Fields(s) {
		if x == f {
			return true
		}
	}
	return false
}

// claimTagError is a merged launch's instance that could not be tagged with
// its claim: the launch happened, so it is neither a rejection nor an
// unknown outcome of the launch itself; what the tagging error says (a
// CloudUnavailableError when AWS did not answer) is kept.
type claimTagError struct{ err error }

func (e *claimTagError) Error() string { return e.err.Error() }
func (e *claimTagError) Unwrap() error { return e.err }

// tagClaim writes a claim's own tags on its instance.
func (p *Provider) tagClaim(ctx context.Context, id, claim string) error {
	tags := ec2Tags(map[string]string{awsv1.TagNodeClaim: claim, "Name": claim})
	if _, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags}); err != nil {
		return unavailable(fmt.Errorf("tagging instance %s with nodeclaim %s: %w", id, claim, explain(err)))
	}
	return nil
}

type assignment struct {
	claim string
	at    time.Time
}

func (p *Provider) assignLocked(id, claim string) {
	p.assigned[id] = assignment{claim: claim, at: p.clock.Now()}
}

func (p *Provider) pruneAssignedLocked() {
	now := p.clock.Now()
	for id, a := range p.assigned {
		if now.Sub(a.at) > assignedTTL {
			delete(p.assigned, id)
		}
	}
}

// assign records that a merged call's instance went to claim.
func (p *Provider) assign(id, claim string) {
	p.adoptMu.Lock()
	defer p.adoptMu.Unlock()
	p.assignLocked(id, claim)
}

// describeByTag lists the cluster's pending and running instances whose tag
// key matches one of values (EC2 wildcards allowed), in chunks EC2 accepts.
func (p *Provider) describeByTag(ctx context.Context, key string, values []string) ([]Instance, error) {
	const chunk = 100
	var out []Instance
	for len(values) > 0 {
		n := min(chunk, len(values))
		got, err := p.describe(ctx, []string{"pending", "running"}, ec2types.Filter{Name: aws.String("tag:" + key), Values: values[:n]})
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		values = values[n:]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// adopted is the claim launched as the instance an earlier call started.
func (p *Provider) adopted(l *launch, in *Instance) *nsv1.NodeClaim {
	c := p.launched(l.claim, l.nc, l.res, plan.Plan{}, l.base, fleetOutcome{
		instanceID: in.ID, instanceType: in.Type, zone: in.Zone, subnetID: in.SubnetID, capacityType: in.CapacityType,
	})
	if in.ImageID != "" {
		c.Status.ImageID = in.ImageID
	}
	msg := fmt.Sprintf("took instance %s (%s %s in %s), launched for this claim by an earlier call whose answer was lost", in.ID, in.CapacityType, in.Type, in.Zone)
	p.log.Info("adopted instance", "nodeclaim", l.claim.Name, "instance", in.ID)
	p.event(l.claim, EventAdopted, msg)
	return c
}
