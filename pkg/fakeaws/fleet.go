package fakeaws

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// APIError is a request-level AWS error: the HTTP front ends render it in the
// service's error shape.
type APIError struct {
	Code    string
	Message string
	Status  int
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

func apiErr(status int, code, format string, args ...any) *APIError {
	return &APIError{Code: code, Message: fmt.Sprintf(format, args...), Status: status}
}

// FleetOverride is one (launch template config, override) pair of a CreateFleet request.
type FleetOverride struct {
	LaunchTemplateID   string
	LaunchTemplateName string
	Version            string
	InstanceType       string
	SubnetID           string
	Zone               string
	ImageID            string
	Priority           float64
	HasPriority        bool
	MaxPrice           float64 // 0: no cap
	WeightedCapacity   float64 // 0: 1
}

// FleetRequest is an instant CreateFleet request.
type FleetRequest struct {
	ClientToken         string
	Type                string // only "instant" is simulated
	TotalTarget         int
	OnDemandTarget      int
	SpotTarget          int
	DefaultCapacityType string
	SpotStrategy        string
	OnDemandStrategy    string
	PoolsToUseCount     int
	SpotMinTarget       int
	OnDemandMinTarget   int
	Overrides           []FleetOverride
	InstanceTags        map[string]string
	// blocks: DefaultTargetCapacityType capacity-block; every override's
	// template must target a Capacity Block.
	blocks bool
	// Fingerprint identifies the request's parameters for idempotency: a
	// reused ClientToken with a different fingerprint is
	// IdempotentParameterMismatch. The HTTP front end sets it to every
	// parameter of the request but the token; when it is empty the other
	// fields of the request stand for it.
	Fingerprint string
}

// fingerprint is the request's identity for idempotency, without its token.
func (r FleetRequest) fingerprint() string {
	if r.Fingerprint != "" {
		return r.Fingerprint
	}
	r.ClientToken = ""
	r.blocks = false
	return fmt.Sprintf("%#v", r) // fmt prints maps in key order
}

// FleetLaunch lists the instances launched for one override.
type FleetLaunch struct {
	Override    int
	Lifecycle   string
	InstanceIDs []string
}

// FleetError is one errorSet entry; Override is -1 when the error is not tied to one.
type FleetError struct {
	Override  int
	Lifecycle string
	Code      string
	Message   string
}

// FleetResult is what CreateFleet answers.
type FleetResult struct {
	FleetID  string
	Launches []FleetLaunch
	Errors   []FleetError
}

type fleetRecord struct {
	result      FleetResult
	fingerprint string
	at          time.Time
}

// idempotencyWindow is how long a client token keeps answering with its
// first result. The SDK fills a fresh token into every CreateFleet, so the
// map must not grow without bound.
const idempotencyWindow = time.Hour

// sweepFleets forgets expired tokens; it runs when the map has doubled since
// the last sweep, so its cost is amortised over the calls that grew it.
func (w *World) sweepFleets(now time.Time) {
	if len(w.fleets) < max(4096, w.nextFleetSweep) {
		return
	}
	for tok, rec := range w.fleets {
		if now.Sub(rec.at) > idempotencyWindow {
			delete(w.fleets, tok)
		}
	}
	w.nextFleetSweep = 2 * len(w.fleets)
}

type candidate struct {
	idx    int
	pool   *Pool
	spare  int
	spec   Spec
	subnet *Subnet
	lt     *LaunchTemplate
	image  string
	weight float64
	prio   float64
	used   int
	// res is the capacity reservation the candidate launches into ("":
	// none); spare is then what the reservation has free.
	res string
}

// CreateFleet launches instances with instant-fleet semantics: partial
// fulfilment, per-override errors, idempotency by client token. The
// allocation strategies are modelled as:
//   - lowest-price: the cheapest pool with spare capacity (spread over the
//     PoolsToUseCount cheapest pools when set);
//   - price-capacity-optimized: among the deep pools — those whose spare
//     capacity is within 10% of the deepest — the cheapest, one instance at a
//     time, so large requests spread over several deep pools and shallow
//     cheap pools are left alone;
//   - capacity-optimized: the deepest pool; -prioritized: the deep pools by Priority;
//   - diversified: round robin over every usable pool;
//   - on-demand prioritized: lowest Priority value first, then price.
func (w *World) CreateFleet(req FleetRequest) (FleetResult, error) {
	w.mu.Lock()
	defer w.unlock()
	w.tickLocked()
	now := w.clock.Now()
	if req.ClientToken != "" {
		if rec, ok := w.fleets[req.ClientToken]; ok && now.Sub(rec.at) <= idempotencyWindow {
			if rec.fingerprint != req.fingerprint() {
				return FleetResult{}, apiErr(400, "IdempotentParameterMismatch",
					"Arguments on this idempotent request are inconsistent with arguments used in previous request(s).")
			}
			return rec.result, nil
		}
		w.sweepFleets(now)
	}
	if req.Type != "" && req.Type != "instant" {
		return FleetResult{}, apiErr(400, "InvalidParameterValue", "fleet type %q is not simulated; use instant", req.Type)
	}
	if req.TotalTarget < 1 {
		return FleetResult{}, apiErr(400, "InvalidParameterValue", "TotalTargetCapacity must be at least 1")
	}
	if len(req.Overrides) == 0 {
		return FleetResult{}, apiErr(400, "MissingParameter", "at least one launch template config with overrides is required")
	}
	dct := req.DefaultCapacityType
	if dct == "" {
		dct = CapacityOnDemand
	}
	blocks := dct == CapacityBlock
	if blocks {
		// Capacity Blocks are bought on demand, each launch into the
		// block its template targets.
		dct = CapacityOnDemand
		if req.SpotTarget > 0 {
			return FleetResult{}, apiErr(400, "InvalidParameterCombination", "SpotTargetCapacity cannot be combined with DefaultTargetCapacityType capacity-block")
		}
	}
	req.blocks = blocks
	want := map[string]int{CapacityOnDemand: req.OnDemandTarget, CapacitySpot: req.SpotTarget}
	if rest := req.TotalTarget - req.OnDemandTarget - req.SpotTarget; rest > 0 {
		want[dct] += rest
	}
	res := FleetResult{FleetID: "fleet-" + w.uuid()}
	reservation := w.newID("r")
	for _, ct := range []string{CapacityOnDemand, CapacitySpot} {
		if want[ct] > 0 {
			w.fulfil(&req, ct, want[ct], &res, reservation)
		}
	}
	if req.ClientToken != "" {
		w.fleets[req.ClientToken] = fleetRecord{result: res, fingerprint: req.fingerprint(), at: now}
	}
	return res, nil
}

func (w *World) fulfil(req *FleetRequest, ct string, target int, res *FleetResult, reservation string) {
	now := w.clock.Now()
	if ct == CapacitySpot && w.opts.NoSpotServiceLinkedRole {
		res.Errors = append(res.Errors, FleetError{Override: -1, Lifecycle: ct, Code: "AuthFailure.ServiceLinkedRoleCreationNotPermitted",
			Message: "The provided credentials do not have permission to create the service-linked role for EC2 Spot Instances."})
		return
	}
	var cands []*candidate
	failed := map[int]bool{}
	fail := func(i int, code, msg string) {
		if !failed[i] {
			failed[i] = true
			res.Errors = append(res.Errors, FleetError{Override: i, Lifecycle: ct, Code: code, Message: msg})
		}
	}
	for i, o := range req.Overrides {
		c, code, msg := w.candidateFor(i, o, ct, now)
		if code == "" && req.blocks && (c.res == "" || w.reservations[c.res].Type != ReservationTypeCapacityBlock) {
			code, msg = "InvalidParameterCombination", "DefaultTargetCapacityType capacity-block needs a launch template that targets a Capacity Block"
		}
		if code != "" {
			fail(i, code, msg)
			continue
		}
		cands = append(cands, c)
	}
	strategy := req.OnDemandStrategy
	minTarget := req.OnDemandMinTarget
	quota := w.opts.OnDemandVCPUQuota
	quotaCode := "VcpuLimitExceeded"
	if ct == CapacitySpot {
		strategy, minTarget, quota, quotaCode = req.SpotStrategy, req.SpotMinTarget, w.opts.SpotVCPUQuota, "MaxSpotInstanceCountExceeded"
	}
	if strategy == "" {
		strategy = "lowest-price"
	}
	if req.PoolsToUseCount > 0 && strategy == "lowest-price" && ct == CapacitySpot {
		// Spread over the N cheapest pools, as the fleet does with InstancePoolsToUseCount.
		sort.SliceStable(cands, func(a, b int) bool { return cands[a].pool.Price < cands[b].pool.Price })
		if len(cands) > req.PoolsToUseCount {
			cands = cands[:req.PoolsToUseCount]
		}
		strategy = "diversified"
	}
	usedVCPU := 0
	if quota > 0 {
		usedVCPU = w.liveVCPU(ct)
	}
	// Overrides may share a pool (one type in two subnets of a zone) or a
	// subnet (many types), so spare capacity and addresses are counted per
	// pool and per subnet, not per candidate.
	ipsLeft := map[*Subnet]int{}
	for _, c := range cands {
		ipsLeft[c.subnet] = c.subnet.FreeIPs
	}
	var plan []*candidate
	units := 0.0
	quotaHit := false
	for units < float64(target) {
		var live []*candidate
		for _, c := range cands {
			if c.spare > 0 && ipsLeft[c.subnet] > 0 {
				live = append(live, c)
			} else if c.spare <= 0 && c.res != "" {
				fail(c.idx, "ReservationCapacityExceeded", fmt.Sprintf("The requested number of instances exceeds the available capacity of the capacity reservation '%s'.", c.res))
			} else if c.spare <= 0 {
				fail(c.idx, "InsufficientInstanceCapacity", insufficientMsg(c.pool.InstanceType, c.pool.Zone))
			} else {
				fail(c.idx, "InsufficientFreeAddressesInSubnet", fmt.Sprintf("There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", c.subnet.ID))
			}
		}
		if len(live) == 0 {
			break
		}
		c := choose(strategy, live)
		if quota > 0 && usedVCPU+c.spec.VCPU > quota {
			quotaHit = true
			break
		}
		usedVCPU += c.spec.VCPU
		c.spare--
		c.used++
		ipsLeft[c.subnet]--
		for _, o := range cands {
			if o.pool == c.pool && o.res == c.res {
				o.spare = c.spare
			}
		}
		plan = append(plan, c)
		units += c.weight
	}
	if quotaHit {
		msg := "Max spot instance count exceeded"
		if ct == CapacityOnDemand {
			msg = "You have requested more vCPU capacity than your current vCPU limit allows for the instance bucket that the specified instance type belongs to."
		}
		res.Errors = append(res.Errors, FleetError{Override: -1, Lifecycle: ct, Code: quotaCode, Message: msg})
	}
	if units < float64(minTarget) {
		res.Errors = append(res.Errors, FleetError{Override: -1, Lifecycle: ct, Code: "UnfulfillableCapacity",
			Message: fmt.Sprintf("Unable to fulfill the minimum target capacity %d; no instances were launched.", minTarget)})
		return
	}
	if units < float64(target) && ct == CapacitySpot && !quotaHit {
		res.Errors = append(res.Errors, FleetError{Override: -1, Lifecycle: ct, Code: "UnfulfillableCapacity",
			Message: "There is no Spot capacity available that matches your request."})
	}
	byOverride := map[int]int{}
	for _, c := range plan {
		in := w.launch(c, ct, req, res.FleetID, reservation, now)
		k, ok := byOverride[c.idx]
		if !ok {
			k = len(res.Launches)
			byOverride[c.idx] = k
			res.Launches = append(res.Launches, FleetLaunch{Override: c.idx, Lifecycle: ct})
		}
		res.Launches[k].InstanceIDs = append(res.Launches[k].InstanceIDs, in.ID)
	}
}

func insufficientMsg(t, z string) string {
	return fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity.", t, z)
}

// candidateFor resolves one override into a usable pool, or an error code and message.
func (w *World) candidateFor(i int, o FleetOverride, ct string, now time.Time) (*candidate, string, string) {
	lt := w.findTemplate(o.LaunchTemplateID, o.LaunchTemplateName)
	if lt == nil {
		if o.LaunchTemplateID != "" {
			return nil, "InvalidLaunchTemplateId.NotFound", fmt.Sprintf("The specified launch template, with template ID %s, does not exist.", o.LaunchTemplateID)
		}
		return nil, "InvalidLaunchTemplateName.NotFoundException", fmt.Sprintf("The specified launch template, with template name %s, does not exist.", o.LaunchTemplateName)
	}
	if name := lt.Data["IamInstanceProfile.Name"]; !w.instanceProfileKnownLocked(name) {
		return nil, "InvalidParameterValue", fmt.Sprintf("Value (%s) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name", name)
	}
	t := o.InstanceType
	if t == "" {
		t = lt.InstanceType
	}
	spec, ok := w.specs[t]
	if !ok {
		return nil, "InvalidParameterValue", fmt.Sprintf("Invalid value '%s' for InstanceType.", t)
	}
	if o.SubnetID != "" && !subnetIDs.wellFormed(o.SubnetID) {
		e := subnetIDs.malformedErr(o.SubnetID)
		return nil, e.Code, e.Message
	}
	if o.ImageID != "" && !imageIDs.wellFormed(o.ImageID) {
		e := imageIDs.malformedErr(o.ImageID)
		return nil, e.Code, e.Message
	}
	sn := w.subnet(o.SubnetID)
	if o.SubnetID != "" && sn == nil {
		return nil, "InvalidSubnetID.NotFound", fmt.Sprintf("The subnet ID '%s' does not exist", o.SubnetID)
	}
	zone := o.Zone
	if sn != nil {
		if zone != "" && zone != sn.Zone {
			return nil, "InvalidParameterValue", fmt.Sprintf("subnet %s is in %s, not %s", sn.ID, sn.Zone, zone)
		}
		zone = sn.Zone
	}
	if sn == nil {
		// EC2 picks the default subnet of the zone; the fake picks the first subnet there.
		for _, s := range w.subnets {
			if s.Zone == zone || zone == "" {
				sn, zone = s, s.Zone
				break
			}
		}
		if sn == nil {
			return nil, "InvalidParameterValue", fmt.Sprintf("no subnet in availability zone %q", zone)
		}
	}
	image := o.ImageID
	if image == "" {
		image = lt.ImageID
	}
	img := w.image(image)
	if img == nil {
		return nil, "InvalidAMIID.NotFound", fmt.Sprintf("The image id '[%s]' does not exist", image)
	}
	if img.Arch != spec.Arch {
		return nil, "InvalidParameterValue", fmt.Sprintf("The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI.", spec.Arch, img.Arch)
	}
	p := w.pools[PoolKey{t, zone, ct}]
	if p == nil {
		return nil, "Unsupported", fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", t, zone)
	}
	res := ""
	if ct == CapacityOnDemand {
		id, code, msg := w.reservationFor(lt, t, zone, nil, now)
		if code != "" {
			return nil, code, msg
		}
		res = id
	}
	if res != "" {
		// A reservation's capacity is set aside: the pool's ICE and spare
		// do not apply.
		if sn.FreeIPs <= 0 {
			return nil, "InsufficientFreeAddressesInSubnet", fmt.Sprintf("There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", sn.ID)
		}
		r := w.readReservation(w.reservations[res], now)
		c := &candidate{idx: i, pool: p, spare: r.Available, spec: spec, subnet: sn, lt: lt, image: image, weight: o.WeightedCapacity, prio: math.MaxFloat64, res: res}
		if c.weight <= 0 {
			c.weight = 1
		}
		if o.HasPriority {
			c.prio = o.Priority
		}
		return c, "", ""
	}
	if now.Before(p.ICEUntil) || p.Spare <= 0 {
		return nil, "InsufficientInstanceCapacity", insufficientMsg(t, zone)
	}
	if ct == CapacitySpot && o.MaxPrice > 0 && o.MaxPrice < p.Price {
		return nil, "SpotMaxPriceTooLow", fmt.Sprintf("Your Spot request price of %g is lower than the minimum required Spot request fulfillment price of %g.", o.MaxPrice, p.Price)
	}
	if sn.FreeIPs <= 0 {
		return nil, "InsufficientFreeAddressesInSubnet", fmt.Sprintf("There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", sn.ID)
	}
	c := &candidate{idx: i, pool: p, spare: p.Spare, spec: spec, subnet: sn, lt: lt, image: image, weight: o.WeightedCapacity, prio: math.MaxFloat64}
	if c.weight <= 0 {
		c.weight = 1
	}
	if o.HasPriority {
		c.prio = o.Priority
	}
	return c, "", ""
}

// launch creates one pending instance from a chosen candidate.
func (w *World) launch(c *candidate, ct string, req *FleetRequest, fleetID, reservation string, now time.Time) *Instance {
	if c.res == "" {
		c.pool.Spare--
	}
	c.subnet.FreeIPs--
	tags := cloneTags(c.lt.InstanceTags)
	if tags == nil {
		tags = map[string]string{}
	}
	for k, v := range req.InstanceTags {
		tags[k] = v
	}
	tags["aws:ec2:fleet-id"] = fleetID
	in := &Instance{
		ID: w.newID("i"), Type: c.spec.Name, Arch: c.spec.Arch, Zone: c.pool.Zone, CapacityType: ct,
		State: StatePending, LaunchTime: now, StateChangedAt: now, Tags: tags,
		SubnetID: c.subnet.ID, VpcID: c.subnet.VpcID, ImageID: c.image,
		SecurityGroupIDs: append([]string(nil), c.lt.SecurityGroupIDs...),
		PrivateIP:        w.nextIP(c.subnet), Price: c.pool.Price, LaunchTemplateID: c.lt.ID,
		UserData: c.lt.UserData, FleetID: fleetID, ReservationID: reservation, ClientToken: req.ClientToken,
		CapacityReservationID: c.res,
	}
	in.BootAt = now.Add(w.bootDelay())
	w.instances[in.ID] = in
	w.instOrder = append(w.instOrder, in.ID)
	w.publishStateChange(in, now)
	w.emit(EventLaunched, in)
	w.schedule(in.BootAt, timerBoot, in.ID)
	return in
}

// bootDelay is how long the next instance stays pending: BootDelay plus
// its draw of BootJitter. The caller holds w.mu.
func (w *World) bootDelay() time.Duration {
	d := w.opts.BootDelay
	if w.opts.BootJitter > 0 {
		d += time.Duration(w.rng.Int63n(int64(w.opts.BootJitter)))
	}
	return d
}

func (w *World) image(id string) *Image {
	for _, i := range w.images {
		if i.ID == id {
			return i
		}
	}
	return nil
}

func (w *World) liveVCPU(ct string) int {
	n := 0
	for _, in := range w.instances {
		if in.CapacityType == ct && in.State != StateTerminated && in.State != StateShuttingDown {
			n += w.specs[in.Type].VCPU
		}
	}
	return n
}

func choose(strategy string, live []*candidate) *candidate {
	cheaper := func(a, b *candidate) bool {
		if a.pool.Price != b.pool.Price {
			return a.pool.Price < b.pool.Price
		}
		return a.idx < b.idx
	}
	deep := func() []*candidate {
		maxSpare := 0
		for _, c := range live {
			maxSpare = max(maxSpare, c.spare)
		}
		floor := int(math.Ceil(0.9 * float64(maxSpare)))
		var out []*candidate
		for _, c := range live {
			if c.spare >= floor {
				out = append(out, c)
			}
		}
		return out
	}
	best := func(cs []*candidate, less func(a, b *candidate) bool) *candidate {
		b := cs[0]
		for _, c := range cs[1:] {
			if less(c, b) {
				b = c
			}
		}
		return b
	}
	switch strategy {
	case "price-capacity-optimized":
		return best(deep(), cheaper)
	case "capacity-optimized":
		return best(live, func(a, b *candidate) bool {
			if a.spare != b.spare {
				return a.spare > b.spare
			}
			return cheaper(a, b)
		})
	case "capacity-optimized-prioritized", "prioritized":
		cs := live
		if strategy != "prioritized" {
			cs = deep()
		}
		return best(cs, func(a, b *candidate) bool {
			pa, pb := priority(a), priority(b)
			if pa != pb {
				return pa < pb
			}
			return cheaper(a, b)
		})
	case "diversified":
		return best(live, func(a, b *candidate) bool {
			if a.used != b.used {
				return a.used < b.used
			}
			return cheaper(a, b)
		})
	default: // lowest-price
		return best(live, cheaper)
	}
}

func priority(c *candidate) float64 { return c.prio }
