package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/plan"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/userdata"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Allocation strategies: price-capacity-optimized steers spot away from
// shallow pools (fewer interruptions) at a small price cost; on-demand has
// no interruption risk, so the cheapest wins.
const (
	spotStrategy     = ec2types.SpotAllocationStrategyPriceCapacityOptimized
	onDemandStrategy = ec2types.FleetOnDemandAllocationStrategyLowestPrice
)

// Create launches the claim's instance: CreateAll of one claim.
func (p *Provider) Create(ctx context.Context, claim *nsv1.NodeClaim) (*nsv1.NodeClaim, error) {
	r := p.CreateAll(ctx, []*nsv1.NodeClaim{claim})[0]
	return r.Claim, r.Err
}

// launch is one claim's progress through CreateAll's rounds.
type launch struct {
	claim      *nsv1.NodeClaim
	nc         *awsv1.EC2NodeClass
	res        *Resolved
	base       []*catalog.InstanceType
	types      []*catalog.InstanceType
	pl         plan.Plan
	req        fleetRequest
	failures   []string
	spotFailed bool
	done       bool
	// subnets are the usable subnets of the last round's plan.
	subnets []plan.Subnet
}

// CreateAll launches the claims together. It first takes, for each claim,
// an instance an earlier call already launched for it (idempotency.go).
// Then each round plans every claim still waiting, merges the claims whose
// CreateFleet requests are identical into calls of up to maxBatch
// (TotalTargetCapacity = their number), and runs the calls in the order
// their first claim was given, so the same input always makes the same
// calls. When every option of a call fails for lack of capacity, the failed
// offerings are marked in the ICE cache and the claim is planned again with
// what is left (other spot pools, then on-demand), up to MaxLaunchAttempts
// rounds.
func (p *Provider) CreateAll(ctx context.Context, claims []*nsv1.NodeClaim) []cloudprovider.CreateResult {
	results := make([]cloudprovider.CreateResult, len(claims))
	launches := make([]*launch, len(claims))
	var (
		waiting []*launch
		at      []int
	)
	for i, claim := range claims {
		l, err := p.prepare(ctx, claim)
		if err != nil {
			results[i].Err = err
			continue
		}
		launches[i] = l
		waiting, at = append(waiting, l), append(at, i)
	}
	for j, a := range p.findLaunched(ctx, waiting) {
		l, i := waiting[j], at[j]
		switch {
		case a.err != nil:
			results[i].Err, l.done = a.err, true
		case a.instance != nil:
			results[i].Claim, l.done = p.adopted(l, a.instance), true
		}
	}
	for round := 0; round < p.opts.MaxLaunchAttempts; round++ {
		var (
			keys   []string
			groups = map[string][]int{}
		)
		for i, l := range launches {
			if l == nil || l.done {
				continue
			}
			if err := p.planLaunch(ctx, l, round); err != nil {
				results[i].Err, l.done = unavailable(err), true
				continue
			}
			// Identical requests share a call, at most maxBatch claims each.
			key := hashJSON(l.req.input)
			for n := 0; ; n++ {
				k := fmt.Sprintf("%s/%d", key, n)
				if len(groups[k]) < maxBatch {
					if _, ok := groups[k]; !ok {
						keys = append(keys, k)
					}
					groups[k] = append(groups[k], i)
					break
				}
			}
		}
		if len(keys) == 0 {
			break
		}
		for _, key := range keys {
			idx := groups[key]
			reqs := make([]fleetRequest, len(idx))
			for j, i := range idx {
				reqs[j] = launches[i].req
			}
			outs := p.runFleet(ctx, reqs)
			for j, i := range idx {
				l := launches[i]
				claim, err, done := p.settle(l, outs[j].Out, outs[j].Err)
				results[i] = cloudprovider.CreateResult{Claim: claim, Err: err}
				l.done = done
			}
		}
	}
	for i, l := range launches {
		if l != nil && !l.done {
			results[i].Err = cloudprovider.NewInsufficientCapacityError(withFailures(errors.New("every launch attempt ran out of capacity"), l.failures))
		}
	}
	return results
}

// prepare resolves what every attempt of a claim shares: its node class,
// the class's subnets, groups and images, and the types those images boot.
func (p *Provider) prepare(ctx context.Context, claim *nsv1.NodeClaim) (*launch, error) {
	nc, err := p.nodeClass(ctx, claim.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	res, err := p.resolveCached(ctx, nc)
	if err != nil {
		if isTransient(err) {
			// AWS did not answer; the class may be fine.
			return nil, cloudprovider.NewCloudUnavailableError(fmt.Errorf("resolving EC2NodeClass %s: %w", nc.Name, err))
		}
		return nil, cloudprovider.NewNodeClassNotReadyError(err)
	}
	res = withStatus(res, nc)
	base, key, err := p.instanceTypes(ctx, nc, res)
	if err != nil {
		return nil, unavailable(err)
	}
	l := &launch{claim: claim, nc: nc, res: res}
	var unbootable []*catalog.InstanceType
	l.base, unbootable = p.bootable(key, base, res.AMIs)
	wanted := scheduling.FromAPI(claim.Spec.Requirements).Get(corev1.LabelInstanceTypeStable)
	var dropped []string
	for _, it := range unbootable {
		if wanted == nil || wanted.Has(it.Name) {
			dropped = append(dropped, it.Name)
		}
	}
	if len(dropped) > 0 {
		// Said in every error of this launch: the user must see why a type
		// the solver chose was not asked for.
		l.failures = append(l.failures, noImageReason(nc.Name, dropped))
	}
	if wanted != nil {
		// Only the types the claim may launch: each round copies its types
		// to mark availability and spot risk, and a burst launches hundreds
		// of claims at once, so copying the class's whole catalog per claim
		// (about 1 MB) made the controller's heap spike by hundreds of MB.
		l.base = slices.DeleteFunc(slices.Clone(l.base), func(it *catalog.InstanceType) bool { return !wanted.Has(it.Name) })
	}
	return l, nil
}

// noImageReason names the types no image of the class fits (a few of them).
func noImageReason(class string, types []string) string {
	const show = 5
	names := strings.Join(types[:min(len(types), show)], ", ")
	if len(types) > show {
		names += fmt.Sprintf(" and %d more", len(types)-show)
	}
	return fmt.Sprintf("dropped %s: no image in ec2nodeclass %s's status.amis meets their requirements (a GPU or accelerator no resolved variant drives, or an architecture without an image)", names, class)
}

// planLaunch picks the claim's options for this round (the ICE cache as it
// is now) and renders its CreateFleet request.
func (p *Provider) planLaunch(ctx context.Context, l *launch, round int) error {
	subnets := p.usableSubnets(l.res.Subnets)
	l.subnets = subnets
	// Spot offerings carry their interruption risk: plan orders them by
	// risk-weighted price and the pool's ceiling (copied to the claim) drops some.
	l.types = catalog.WithSpotRisk(p.withReservations(catalog.WithAvailability(l.base, p.ice), l.res), p.history, l.claim.Spec.MaxSpotInterruptionRisk)
	if p.adjust != nil {
		// The prices the solver chose by (NodeOverlays): the options are
		// ordered, and the claim priced, by them.
		adjusted, err := p.adjust(ctx, l.types)
		if err != nil {
			return cloudprovider.NewCloudUnavailableError(fmt.Errorf("adjusting the instance types of %s: %w", l.claim.Name, err))
		}
		l.types = adjusted
	}
	pl, err := plan.Make(plan.Input{
		Requirements: l.claim.Spec.Requirements, Requests: l.claim.Spec.Resources.Requests,
		InstanceTypes: l.types, Subnets: subnets, MaxOptions: p.opts.MaxOverrides,
		AvoidSpot: l.spotFailed && round == p.opts.MaxLaunchAttempts-1,
	})
	if errors.Is(err, plan.ErrNoOptions) {
		return cloudprovider.NewInsufficientCapacityError(withFailures(err, l.failures))
	}
	if err != nil {
		return fmt.Errorf("planning the launch of %s: %w", l.claim.Name, err)
	}
	if pl.Note != "" {
		p.log.Info("launch fallback", "nodeclaim", l.claim.Name, "reason", pl.Note, "round", round)
		p.event(l.claim, EventOnDemandFallback, pl.Note)
	}
	req, err := p.buildFleetRequest(ctx, l.claim, l.nc, l.res, pl, launchToken(l.claim, round))
	if err != nil {
		return err
	}
	l.pl, l.req = pl, req
	return nil
}

// settle reads one claim's share of a CreateFleet answer: the launched
// claim, an error that ends its launch, or neither (done false: plan again).
func (p *Provider) settle(l *launch, out fleetOutcome, callErr error) (*nsv1.NodeClaim, error, bool) {
	if callErr != nil {
		return nil, launchCallError(l.claim.Name, callErr), true
	}
	retry, fatal := p.markFailures(l.pl, out.errs)
	if out.instanceID != "" {
		c := p.launched(l.claim, l.nc, l.res, l.pl, l.types, out)
		if p.fellBack(l) {
			markFallback(c, p.clock.Now())
		}
		return c, nil, true
	}
	for _, e := range out.errs {
		l.failures = append(l.failures, fmt.Sprintf("%s %s: %s", e.Lifecycle, aws.ToString(e.ErrorCode), overrideName(e.LaunchTemplateAndOverrides)))
	}
	if fatal != nil {
		return nil, cloudprovider.NewLaunchRejectedError(fmt.Errorf("launching %s: %w", l.claim.Name, fatal)), true
	}
	if !retry {
		return nil, cloudprovider.NewLaunchRejectedError(fmt.Errorf("launching %s: the fleet launched nothing%s", l.claim.Name, failureText(l.failures))), true
	}
	l.spotFailed = l.spotFailed || l.pl.CapacityType == nsv1.CapacityTypeSpot
	msg := fmt.Sprintf("no %s capacity in %d offerings%s; retrying with the remaining offerings", l.pl.CapacityType, len(l.pl.Options), failureText(l.failures))
	p.log.Info("launch fallback", "nodeclaim", l.claim.Name, "reason", msg)
	p.event(l.claim, EventCapacityFallback, msg)
	return nil, nil, false
}

// launchCallError classifies a failed CreateFleet call for the caller: no
// answer leaves the launch's outcome unknown (the next Create finds the
// instance if there is one); an answer refusing the request launched
// nothing, so the next attempt needs a new token. A token EC2 saw before
// with other parameters is refused too: findLaunched found no instance of
// the earlier call, so it launched nothing either.
func launchCallError(claim string, err error) error {
	err = fmt.Errorf("launching %s: %w", claim, err)
	var tagErr *claimTagError
	if errors.As(err, &tagErr) {
		// The instance exists; the claim takes it on its next launch. Not a
		// rejection: the attempt (and its token) must not move on for it.
		return err
	}
	switch code := errorCode(err); {
	case isTransient(err):
		return cloudprovider.NewCloudUnavailableError(err)
	case code == codeIdempotentMismatch:
		return cloudprovider.NewLaunchRejectedError(fmt.Errorf("%w (an earlier call with this claim's launch token asked for other options and started no instance; the next attempt uses a new token)", err))
	case code != "":
		return cloudprovider.NewLaunchRejectedError(err)
	}
	// Not an answer from EC2 (an unreadable response, say): unknown.
	return cloudprovider.NewCloudUnavailableError(err)
}

// withImages splits types into those an image of the class boots (the one
// scheduling.ImageFor gives them: GPU types the NVIDIA variant, and so on)
// and those none does.
func withImages(types []*catalog.InstanceType, amis []awsv1.AMI) (kept, unbootable []*catalog.InstanceType) {
	images := scheduling.CompileImages(amis)
	kept = make([]*catalog.InstanceType, 0, len(types))
	for _, it := range types {
		if _, ok := images.For(it.Labels); ok {
			kept = append(kept, it)
		} else {
			unbootable = append(unbootable, it)
		}
	}
	return kept, unbootable
}

// bootable is withImages of a cached type list (key: its cache key),
// remembered until the list or the images change: every launch asks it of
// the whole catalog.
func (p *Provider) bootable(key string, types []*catalog.InstanceType, amis []awsv1.AMI) (kept, unbootable []*catalog.InstanceType) {
	p.bootMu.Lock()
	defer p.bootMu.Unlock()
	if e, ok := p.bootCache[key]; ok && sameTypes(e.types, types) && len(e.types) == len(types) && slices.EqualFunc(e.amis, amis, sameAMI) {
		return e.kept, e.unbootable
	}
	kept, unbootable = withImages(types, amis)
	if p.bootCache == nil {
		p.bootCache = map[string]bootEntry{}
	}
	p.bootCache[key] = bootEntry{types: types, amis: amis, kept: kept, unbootable: unbootable}
	return kept, unbootable
}

// withStatus is res narrowed to what the class's status names. Drift
// compares a node's image, subnet and security groups with that status, so
// a launch must not run ahead of it or lag behind it: an image, subnet or
// group resolved newer than the status (published or tagged between two
// resyncs) would make a node the disruption controller replaces at once,
// and one from a cached resolution older than the status a replacement
// that drifts again. What is new is launched once the class's status shows
// it (its resync, 1 min).
//
// Images and security groups come from the status as they are. Subnets are
// the resolved ones the status also names, keeping the addresses left that
// the fresh resolution counted; when none of the status's subnets resolves
// any more, the resolved ones are used (the status is about to change and
// a launch elsewhere beats none).
func withStatus(res *Resolved, nc *awsv1.EC2NodeClass) *Resolved {
	st := nc.Status
	if len(st.AMIs) == 0 && len(st.SecurityGroups) == 0 && len(st.Subnets) == 0 {
		return res
	}
	cp := *res // res is the resolve cache's
	if len(st.AMIs) > 0 {
		cp.AMIs = append([]awsv1.AMI(nil), st.AMIs...)
	}
	if len(st.SecurityGroups) > 0 {
		cp.SecurityGroups = append([]awsv1.SecurityGroup(nil), st.SecurityGroups...)
	}
	if len(st.Subnets) > 0 {
		named := map[string]bool{}
		for _, s := range st.Subnets {
			named[s.ID] = true
		}
		var kept []ResolvedSubnet
		for _, s := range res.Subnets {
			if named[s.ID] {
				kept = append(kept, s)
			}
		}
		if len(kept) > 0 {
			cp.Subnets = kept
		}
	}
	return &cp
}

// imageFor is the id of the image an instance type launches with; "" when none fits.
func imageFor(amis []awsv1.AMI, it *catalog.InstanceType) string {
	img, _ := scheduling.ImageFor(amis, it.Labels)
	return img.ID
}

// nodeLabels are the labels the kubelet registers with: the claim's, minus
// the per-node ones (they would make every template unique) and those a
// kubelet may not set (registration puts them on the Node), plus the
// capacity type, which is the same for every option of one launch.
func nodeLabels(claim *nsv1.NodeClaim, capacityType string) map[string]string {
	out := map[string]string{}
	for k, v := range claim.Labels {
		switch k {
		case nsv1.LabelNodeClaim, corev1.LabelHostname, nsv1.LabelRegistered, nsv1.LabelInitialized:
			continue
		}
		if !userdata.KubeletMaySet(k) {
			continue
		}
		out[k] = v
	}
	out[nsv1.LabelCapacityType] = capacityType
	return out
}

func nodeTaints(claim *nsv1.NodeClaim) []corev1.Taint {
	out := append([]corev1.Taint{nsv1.UnregisteredTaint}, claim.Spec.Taints...)
	return append(out, claim.Spec.StartupTaints...)
}

// buildFleetRequest renders the launch templates (one per image among the
// options) and the CreateFleet input for a plan.
func (p *Provider) buildFleetRequest(ctx context.Context, claim *nsv1.NodeClaim, nc *awsv1.EC2NodeClass, res *Resolved, pl plan.Plan, token string) (fleetRequest, error) {
	custom := ""
	if nc.Spec.UserData != nil {
		custom = *nc.Spec.UserData
	}
	udOpts := userdata.Options{
		Family: res.Family, ClusterName: p.cluster.Name, Endpoint: p.cluster.Endpoint, CABundle: p.cluster.CABundle, ServiceCIDR: p.cluster.ServiceCIDR,
		Labels: nodeLabels(claim, pl.CapacityType), Taints: nodeTaints(claim), Kubelet: nc.Spec.Kubelet, Custom: custom,
	}
	pool := claim.Labels[nsv1.LabelNodePool]
	common := map[string]string{}
	for k, v := range nc.Spec.Tags {
		common[k] = v
	}
	common[awsv1.TagCluster] = p.cluster.Name
	common[awsv1.TagNodePool] = pool
	common[awsv1.LabelEC2NodeClass] = nc.Name
	groups := make([]string, 0, len(res.SecurityGroups))
	for _, g := range res.SecurityGroups {
		groups = append(groups, g.ID)
	}
	bds := nc.Spec.BlockDeviceMappings
	if len(bds) == 0 {
		bds = defaultBlockDevices(res.Family)
	}
	ltTags := map[string]string{}
	for k, v := range nc.Spec.Tags {
		ltTags[k] = v
	}
	ltTags[awsv1.TagCluster] = p.cluster.Name
	// One launch template per image (and, on Bottlerocket, per pod limit:
	// it has no pods-per-core, so the limit is written per group of types).
	// Options stay in price order inside each template's config.
	type templateKey struct {
		arch, image string
		pods        int64
		reservation string // a reserved launch's template targets its reservation
		block       bool
	}
	byTemplate := map[templateKey][]ec2types.FleetLaunchTemplateOverridesRequest{}
	var keys []templateKey
	for _, o := range pl.Options {
		k := templateKey{arch: o.InstanceType.Arch, image: imageFor(res.AMIs, o.InstanceType)}
		if k.image == "" {
			continue // withImages dropped it already; a plan never holds one
		}
		if res.Family == userdata.FamilyBottlerocket {
			k.pods = o.InstanceType.Capacity.Pods().Value()
		}
		if o.Reservation != nil {
			k.reservation = o.Reservation.ID
			k.block = o.Reservation.Type == awsv1.CapacityReservationTypeCapacityBlock
		}
		if _, ok := byTemplate[k]; !ok {
			keys = append(keys, k)
		}
		byTemplate[k] = append(byTemplate[k], ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(o.InstanceType.Name),
			SubnetId:     aws.String(o.SubnetID),
			// The order's key, so a prioritized strategy reads the order we chose.
			Priority: aws.Float64(o.Cost()),
		})
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.arch != b.arch {
			return a.arch < b.arch
		}
		if a.image != b.image {
			return a.image < b.image
		}
		if a.pods != b.pods {
			return a.pods < b.pods
		}
		return a.reservation < b.reservation
	})
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: fleetCapacityType(pl),
		},
	}
	if pl.CapacityType == nsv1.CapacityTypeSpot {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: spotStrategy}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: onDemandStrategy}
		if overlaid(pl) {
			// EC2's lowest-price reads its own list prices; an overlay's
			// order is ours to give: the Priority of each override.
			in.OnDemandOptions.AllocationStrategy = ec2types.FleetOnDemandAllocationStrategyPrioritized
		}
	}
	for _, k := range keys {
		o := udOpts
		o.MaxPods = k.pods
		ud, err := userdata.Render(o)
		if err != nil {
			return fleetRequest{}, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("rendering user data: %w", err))
		}
		spec := &templateSpec{
			Cluster: p.cluster.Name, ImageID: k.image, SecurityGroups: groups, UserData: ud,
			BlockDevices: bds, Metadata: metadataOptions(nc.Spec.MetadataOptions), Tags: ltTags,
			InstanceProfile: res.InstanceProfile, PublicIP: nc.Spec.AssociatePublicIPAddress,
			Monitoring:            nc.Spec.DetailedMonitoring != nil && *nc.Spec.DetailedMonitoring,
			CapacityReservationID: k.reservation, CapacityBlock: k.block,
		}
		name, err := p.ensureLaunchTemplate(ctx, spec)
		if err != nil {
			return fleetRequest{}, err
		}
		in.LaunchTemplateConfigs = append(in.LaunchTemplateConfigs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
			Overrides:                   byTemplate[k],
		})
	}
	tags := ec2Tags(common)
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet} {
		in.TagSpecifications = append(in.TagSpecifications, ec2types.TagSpecification{ResourceType: rt, Tags: tags})
	}
	return fleetRequest{
		input:     in,
		claimTags: map[string]string{awsv1.TagNodeClaim: claim.Name, "Name": claim.Name},
		claimName: claim.Name,
		launchKey: cloudprovider.LaunchKey(claim),
		token:     token,
	}, nil
}

// overlaid reports whether a NodeOverlay priced one of the plan's options
// (catalog.Offering.PricedBy): their order is then not EC2's list-price
// order.
func overlaid(pl plan.Plan) bool {
	for _, o := range pl.Options {
		for _, of := range o.InstanceType.Offerings {
			if of.Zone == o.Zone && of.CapacityType == pl.CapacityType && of.PricedBy != "" {
				return true
			}
		}
	}
	return false
}

// launched fills the claim's status from the instance the fleet started,
// and annotates it with what drift compares later: the node class's hash,
// the subnet and the security groups it launched with.
func (p *Provider) launched(claim *nsv1.NodeClaim, nc *awsv1.EC2NodeClass, res *Resolved, pl plan.Plan, types []*catalog.InstanceType, out fleetOutcome) *nsv1.NodeClaim {
	var it *catalog.InstanceType
	price := 0.0
	zone, subnet := out.zone, out.subnetID
	for _, o := range pl.Options {
		if o.InstanceType.Name == out.instanceType && (o.Zone == zone || (zone == "" && o.SubnetID == out.subnetID)) {
			it, price, zone = o.InstanceType, o.Price, o.Zone
			if subnet == "" {
				subnet = o.SubnetID
			}
			break
		}
	}
	if it == nil {
		for _, t := range types {
			if t.Name == out.instanceType {
				it = t
			}
		}
	}
	ct := out.capacityType
	if ct == "" || pl.CapacityType == nsv1.CapacityTypeReserved {
		// EC2 answers a reserved launch's lifecycle as on-demand.
		ct = pl.CapacityType
	}
	var reservation *catalog.ReservationRef
	for _, o := range pl.Options {
		if o.Reservation != nil && o.InstanceType.Name == out.instanceType && o.Zone == zone {
			reservation = o.Reservation
			p.reservations.launched(o.Reservation.ID)
			break
		}
	}
	c := claim.DeepCopy()
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	// Its node carries the class it launched with, as the instance's tag does.
	c.Labels[awsv1.LabelEC2NodeClass] = nc.Name
	c.Status.ProviderID = providerID(zone, out.instanceID)
	c.Status.InstanceType = out.instanceType
	c.Status.Zone = zone
	c.Status.CapacityType = ct
	if it != nil {
		for k, v := range it.LabelsFor(catalog.Offering{Zone: zone, CapacityType: ct}) {
			c.Labels[k] = v
		}
		for k, v := range catalog.ReservationLabels(reservation) {
			c.Labels[k] = v
		}
		c.Status.ImageID = imageFor(res.AMIs, it)
		c.Status.Capacity = it.Capacity.DeepCopy()
		c.Status.Allocatable = it.Allocatable().DeepCopy()
		if price == 0 {
			if o, ok := it.Offerings.Get(zone, ct); ok {
				price = o.Price
			}
		}
	}
	c.Status.Price = nsv1.FormatPrice(price)
	groups := make([]string, 0, len(res.SecurityGroups))
	for _, g := range res.SecurityGroups {
		groups = append(groups, g.ID)
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	for k, v := range awsv1.LaunchAnnotations(nc, subnet, groups) {
		c.Annotations[k] = v
	}
	return c
}

// providerID is the Kubernetes spelling of an EC2 instance.
func providerID(zone, id string) string { return fmt.Sprintf("aws:///%s/%s", zone, id) }

// ParseProviderID returns the instance id of aws:///<zone>/<id>.
func ParseProviderID(pid string) (string, error) {
	rest, ok := strings.CutPrefix(pid, "aws:///")
	if !ok {
		return "", fmt.Errorf("provider id %q is not aws:///<zone>/<instance-id>", pid)
	}
	i := strings.LastIndex(rest, "/")
	id := rest[i+1:]
	if !strings.HasPrefix(id, "i-") {
		return "", fmt.Errorf("provider id %q has no instance id", pid)
	}
	return id, nil
}

func (p *Provider) event(claim *nsv1.NodeClaim, reason, msg string) {
	if p.opts.OnEvent != nil {
		p.opts.OnEvent(claim, reason, msg)
	}
}
