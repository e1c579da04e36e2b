package fakeaws

import (
	"strconv"
	"strings"
)

func (s *Server) describeInstances(p params) (func(x *xmlw), error) {
	ids := p.list("InstanceId")
	if err := instanceIDs.checkIDs(ids); err != nil {
		return nil, err
	}
	if len(ids) > 0 && p.has("MaxResults") {
		return nil, apiErr(400, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	fs := p.filters()
	ctx := s.instanceContext()
	if err := checkFilters(fs, ctx.attr(Instance{}), documentedInstanceFilters); err != nil {
		return nil, err
	}
	all := s.w.Instances()
	known := map[string]bool{}
	for _, in := range all {
		known[in.ID] = true
	}
	for _, id := range ids {
		if !known[id] {
			return nil, apiErr(400, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	var out []Instance
	for _, in := range all {
		if len(ids) > 0 && !contains(ids, in.ID) {
			continue
		}
		ok, err := matchAll(fs, ctx.attr(in), in.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, in)
		}
	}
	from, to, next, err := page(p, len(out), 0, 5, 1000)
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) {
		x.open("reservationSet")
		window := out[from:to]
		for i := 0; i < len(window); {
			j := i
			for j < len(window) && window[j].ReservationID == window[i].ReservationID {
				j++
			}
			x.open("item")
			x.leaf("reservationId", window[i].ReservationID)
			x.leaf("ownerId", ctx.owner)
			x.open("groupSet")
			x.close("groupSet")
			x.open("instancesSet")
			for _, in := range window[i:j] {
				x.open("item")
				ctx.instanceXML(x, in)
				x.close("item")
			}
			x.close("instancesSet")
			x.close("item")
			i = j
		}
		x.close("reservationSet")
		if next != "" {
			x.leaf("nextToken", next)
		}
	}, nil
}

// instanceContext is what rendering and filtering an instance needs from the
// world besides the instance: the account, zone ids and group names.
type instanceContext struct {
	owner  string
	region string
	groups map[string]string
	zoneID func(string) string
	// blocks are the ids of the Capacity Blocks.
	blocks map[string]bool
	// ended are the ODCRs that expired or were cancelled (endedODCRs).
	ended map[string]bool
}

// reservation is the capacity reservation the instance is in now: the one
// it launched into, until that ODCR ends.
func (c instanceContext) reservation(in Instance) string {
	if c.ended[in.CapacityReservationID] {
		return ""
	}
	return in.CapacityReservationID
}

// lifecycle is the instance's instanceLifecycle: spot, capacity-block, or
// "" for on-demand.
func (c instanceContext) lifecycle(in Instance) string {
	switch {
	case in.CapacityType == CapacitySpot:
		return "spot"
	case c.blocks[in.CapacityReservationID]:
		return CapacityBlock
	}
	return ""
}

func (s *Server) instanceContext() instanceContext {
	return instanceContext{owner: s.w.opts.AccountID, region: s.w.opts.Region, groups: s.w.groupNames(), zoneID: s.w.zoneID, blocks: s.w.blockIDs(), ended: s.w.endedODCRs()}
}

// live reports whether the instance still has its network interface: EC2
// drops the subnet, VPC, address and interface of a terminated instance.
func live(in Instance) bool { return in.State != StateTerminated }

// eniID, attachmentID and macAddress derive the primary network interface's
// identity from the instance id, so that they are stable without drawing on
// the world's random source.
func eniID(in Instance) string        { return "eni-" + strings.TrimPrefix(in.ID, "i-") }
func attachmentID(in Instance) string { return "eni-attach-" + strings.TrimPrefix(in.ID, "i-") }
func macAddress(in Instance) string {
	h := strings.TrimPrefix(in.ID, "i-") + "0000000000"
	return "0e:" + h[0:2] + ":" + h[2:4] + ":" + h[4:6] + ":" + h[6:8] + ":" + h[8:10]
}

func (c instanceContext) dnsName(in Instance) string {
	if !live(in) || in.PrivateIP == "" {
		return ""
	}
	return privateDNS(in.PrivateIP, regionOf(in.Zone))
}

func (c instanceContext) groupNames(in Instance) []string {
	out := make([]string, 0, len(in.SecurityGroupIDs))
	for _, g := range in.SecurityGroupIDs {
		out = append(out, c.groups[g])
	}
	return out
}

func stateReason(in Instance) (code, msg string, ok bool) {
	if in.State != StateShuttingDown && in.State != StateTerminated {
		return "", "", false
	}
	if !in.InterruptAt.IsZero() && in.CapacityType == CapacitySpot {
		return "Server.SpotInstanceTermination", "Server.SpotInstanceTermination: Spot instance termination", true
	}
	if !in.InterruptAt.IsZero() {
		// Reclaimed from an interruptible capacity reservation: EC2
		// documents no state reason of its own for it; a server-side one.
		return "Server.InternalError", "Server.InternalError: Capacity reservation capacity reclaimed", true
	}
	return "Client.UserInitiatedShutdown", "Client.UserInitiatedShutdown: User initiated shutdown", true
}

func one(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

// attr answers the DescribeInstances filters. Every value comes from what
// instanceXML renders, so a filter and the answer never disagree. Filters on
// things the fake never gives an instance (key pairs, public addresses,
// placement groups, IPv6) are answered with no values: they match nothing, as
// they would on instances without them.
func (c instanceContext) attr(in Instance) attrFunc {
	liveNet := func(v string) []string {
		if !live(in) {
			return nil
		}
		return one(v)
	}
	return func(n string) ([]string, bool) {
		code, msg, _ := stateReason(in)
		switch n {
		case "instance-id":
			return one(in.ID), true
		case "instance-state-name":
			return one(in.State), true
		case "instance-state-code":
			return []string{strconv.Itoa(stateCode(in.State))}, true
		case "instance-type":
			return one(in.Type), true
		case "availability-zone":
			return one(in.Zone), true
		case "availability-zone-id":
			return one(c.zoneID(in.Zone)), true
		case "subnet-id", "network-interface.subnet-id":
			return liveNet(in.SubnetID), true
		case "vpc-id", "network-interface.vpc-id":
			return liveNet(in.VpcID), true
		case "private-ip-address", "network-interface.private-ip-address", "network-interface.addresses.private-ip-address":
			return liveNet(in.PrivateIP), true
		case "private-dns-name", "network-interface.private-dns-name", "network-interface.addresses.private-dns-name":
			return one(c.dnsName(in)), true
		case "network-interface.availability-zone":
			return liveNet(in.Zone), true
		case "network-interface.network-interface-id":
			return liveNet(eniID(in)), true
		case "network-interface.attachment.attachment-id":
			return liveNet(attachmentID(in)), true
		case "network-interface.attachment.instance-id":
			return liveNet(in.ID), true
		case "network-interface.mac-address":
			return liveNet(macAddress(in)), true
		case "network-interface.owner-id", "network-interface.attachment.instance-owner-id":
			return liveNet(c.owner), true
		case "network-interface.status":
			return liveNet("in-use"), true
		case "network-interface.attachment.status":
			return liveNet("attached"), true
		case "network-interface.attachment.device-index", "network-interface.attachment.network-card-index":
			return liveNet("0"), true
		case "network-interface.attachment.delete-on-termination", "network-interface.addresses.primary",
			"network-interface.source-dest-check", "source-dest-check":
			return liveNet("true"), true
		case "network-interface.requester-managed":
			return liveNet("false"), true
		case "network-interface.attachment.attach-time":
			return liveNet(ec2Time(in.LaunchTime)), true
		case "network-interface.description":
			return nil, true
		case "network-interface.group-id":
			if !live(in) {
				return nil, true
			}
			return in.SecurityGroupIDs, true
		case "network-interface.group-name":
			if !live(in) {
				return nil, true
			}
			return c.groupNames(in), true
		case "image-id":
			return one(in.ImageID), true
		case "instance-lifecycle":
			return one(c.lifecycle(in)), true
		case "capacity-reservation-id":
			return one(c.reservation(in)), true
		case "spot-instance-request-id":
			if in.CapacityType == CapacitySpot {
				return []string{spotRequestID(in)}, true
			}
			return nil, true
		case "architecture":
			return one(in.Arch), true
		case "reservation-id":
			return one(in.ReservationID), true
		case "client-token":
			return one(in.ClientToken), true
		case "instance.group-id":
			return in.SecurityGroupIDs, true
		case "instance.group-name":
			return c.groupNames(in), true
		case "launch-time":
			return []string{ec2Time(in.LaunchTime)}, true
		case "launch-index":
			return []string{"0"}, true
		case "owner-id":
			return one(c.owner), true
		case "hypervisor":
			return []string{"xen"}, true
		case "root-device-type":
			return []string{"ebs"}, true
		case "root-device-name":
			return []string{"/dev/xvda"}, true
		case "virtualization-type":
			return []string{"hvm"}, true
		case "tenancy":
			return []string{"default"}, true
		case "monitoring-state":
			return []string{"disabled"}, true
		case "state-reason-code":
			return one(code), true
		case "state-reason-message":
			return one(msg), true
		case "affinity", "dns-name", "host-id", "ip-address", "ipv6-address",
			"kernel-id", "key-name", "outpost-arn", "placement-group-name", "placement-partition-number",
			"platform", "product-code", "product-code.type", "ramdisk-id", "requester-id",
			"network-interface.ipv6-address", "network-interface.ipv6-addresses.ipv6-address",
			"network-interface.ipv6-addresses.is-primary-ipv6", "network-interface.ipv4-prefixes.ipv4-prefix",
			"network-interface.ipv6-prefixes.ipv6-prefix", "network-interface.outpost-arn",
			"network-interface.requester-id", "network-interface.public-dns-name",
			"network-interface.tag-key", "network-interface.tag-value":
			return nil, true
		}
		if strings.HasPrefix(n, "network-interface.association.") || strings.HasPrefix(n, "network-interface.addresses.association.") {
			return nil, true // no public addresses
		}
		return nil, false
	}
}

func spotRequestID(in Instance) string {
	id := strings.TrimPrefix(in.ID, "i-")
	if len(id) > 8 {
		id = id[:8]
	}
	return "sir-" + id
}

func privateDNS(ip, region string) string {
	host := "ip-" + strings.ReplaceAll(ip, ".", "-")
	if region == "us-east-1" {
		return host + ".ec2.internal"
	}
	return host + "." + region + ".compute.internal"
}

func (c instanceContext) instanceXML(x *xmlw, in Instance) {
	x.leaf("instanceId", in.ID)
	x.leaf("imageId", in.ImageID)
	x.open("instanceState")
	x.leafInt("code", stateCode(in.State))
	x.leaf("name", in.State)
	x.close("instanceState")
	x.leaf("privateDnsName", c.dnsName(in))
	x.leaf("dnsName", "")
	x.leafInt("amiLaunchIndex", 0)
	x.leaf("instanceType", in.Type)
	x.leafTime("launchTime", in.LaunchTime)
	x.open("placement")
	x.leaf("availabilityZone", in.Zone)
	x.leaf("tenancy", "default")
	x.close("placement")
	x.open("monitoring")
	x.leaf("state", "disabled")
	x.close("monitoring")
	if live(in) {
		x.leaf("subnetId", in.SubnetID)
		x.leaf("vpcId", in.VpcID)
		x.leaf("privateIpAddress", in.PrivateIP)
	}
	x.open("groupSet")
	for _, g := range in.SecurityGroupIDs {
		x.open("item")
		x.leaf("groupId", g)
		x.leaf("groupName", c.groups[g])
		x.close("item")
	}
	x.close("groupSet")
	if code, msg, ok := stateReason(in); ok {
		x.open("stateReason")
		x.leaf("code", code)
		x.leaf("message", msg)
		x.close("stateReason")
	}
	x.leaf("architecture", in.Arch)
	x.leaf("rootDeviceType", "ebs")
	x.leaf("rootDeviceName", "/dev/xvda")
	x.leaf("virtualizationType", "hvm")
	x.leaf("hypervisor", "xen")
	if lc := c.lifecycle(in); lc != "" {
		x.leaf("instanceLifecycle", lc)
	}
	if in.CapacityType == CapacitySpot {
		x.leaf("spotInstanceRequestId", spotRequestID(in))
	}
	if id := c.reservation(in); id != "" {
		x.leaf("capacityReservationId", id)
	}
	if in.ClientToken != "" {
		x.leaf("clientToken", in.ClientToken)
	}
	if len(in.Tags) > 0 {
		x.tagSet(in.Tags)
	}
	x.open("networkInterfaceSet")
	if live(in) {
		c.networkInterfaceXML(x, in)
	}
	x.close("networkInterfaceSet")
	x.leafBool("sourceDestCheck", true)
}

// networkInterfaceXML renders the instance's one primary interface.
func (c instanceContext) networkInterfaceXML(x *xmlw, in Instance) {
	dns := c.dnsName(in)
	x.open("item")
	x.leaf("networkInterfaceId", eniID(in))
	x.leaf("subnetId", in.SubnetID)
	x.leaf("vpcId", in.VpcID)
	x.leaf("description", "")
	x.leaf("ownerId", c.owner)
	x.leaf("status", "in-use")
	x.leaf("macAddress", macAddress(in))
	x.leaf("privateIpAddress", in.PrivateIP)
	x.leaf("privateDnsName", dns)
	x.leafBool("sourceDestCheck", true)
	x.open("groupSet")
	for _, g := range in.SecurityGroupIDs {
		x.open("item")
		x.leaf("groupId", g)
		x.leaf("groupName", c.groups[g])
		x.close("item")
	}
	x.close("groupSet")
	x.open("attachment")
	x.leaf("attachmentId", attachmentID(in))
	x.leafInt("deviceIndex", 0)
	x.leaf("status", "attached")
	x.leafTime("attachTime", in.LaunchTime)
	x.leafBool("deleteOnTermination", true)
	x.leafInt("networkCardIndex", 0)
	x.close("attachment")
	x.open("privateIpAddressesSet")
	x.open("item")
	x.leaf("privateIpAddress", in.PrivateIP)
	x.leaf("privateDnsName", dns)
	x.leafBool("primary", true)
	x.close("item")
	x.close("privateIpAddressesSet")
	x.leaf("interfaceType", "interface")
	x.close("item")
}

func regionOf(zone string) string {
	if zone == "" {
		return ""
	}
	return strings.TrimRight(zone, "abcdefghijklmnopqrstuvwxyz")
}

func (w *World) groupNames() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for _, g := range w.groups {
		out[g.ID] = g.Name
	}
	return out
}

func (s *Server) terminateInstances(p params) (func(x *xmlw), error) {
	ids := p.list("InstanceId")
	if len(ids) == 0 {
		return nil, apiErr(400, "MissingParameter", "The request must contain the parameter InstanceId")
	}
	if err := instanceIDs.checkIDs(ids); err != nil {
		return nil, err
	}
	changes, err := s.w.TerminateInstances(ids)
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) {
		x.open("instancesSet")
		for _, c := range changes {
			x.open("item")
			x.leaf("instanceId", c.ID)
			x.open("currentState")
			x.leafInt("code", stateCode(c.Current))
			x.leaf("name", c.Current)
			x.close("currentState")
			x.open("previousState")
			x.leafInt("code", stateCode(c.Previous))
			x.leaf("name", c.Previous)
			x.close("previousState")
			x.close("item")
		}
		x.close("instancesSet")
	}, nil
}
