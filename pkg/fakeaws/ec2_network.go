package fakeaws

import (
	"fmt"
	"sort"
	"strconv"
)

func (s *Server) describeSubnets(p params) (func(x *xmlw), error) {
	ids := p.list("SubnetId")
	if err := subnetIDs.checkIDs(ids); err != nil {
		return nil, err
	}
	all := s.w.Subnets()
	if err := requireKnown(ids, len(all), func(i int) string { return all[i].ID }, "InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist"); err != nil {
		return nil, err
	}
	fs := p.filters()
	var out []Subnet
	for _, sn := range all {
		if len(ids) > 0 && !contains(ids, sn.ID) {
			continue
		}
		ok, err := matchAll(fs, func(n string) ([]string, bool) {
			switch n {
			case "subnet-id":
				return []string{sn.ID}, true
			case "vpc-id":
				return []string{sn.VpcID}, true
			case "availability-zone":
				return []string{sn.Zone}, true
			case "availability-zone-id":
				return []string{sn.ZoneID}, true
			case "cidr-block", "cidr":
				return []string{sn.CIDR}, true
			case "state":
				return []string{"available"}, true
			case "available-ip-address-count":
				return []string{strconv.Itoa(sn.FreeIPs)}, true
			}
			return nil, false
		}, sn.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, sn)
		}
	}
	from, to, next, err := page(p, len(out), 0, 5, 1000)
	if err != nil {
		return nil, err
	}
	owner, region := s.w.opts.AccountID, s.w.opts.Region
	return func(x *xmlw) {
		x.open("subnetSet")
		for _, sn := range out[from:to] {
			x.open("item")
			x.leaf("subnetId", sn.ID)
			x.leaf("subnetArn", fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", region, owner, sn.ID))
			x.leaf("state", "available")
			x.leaf("ownerId", owner)
			x.leaf("vpcId", sn.VpcID)
			x.leaf("cidrBlock", sn.CIDR)
			x.leafInt("availableIpAddressCount", sn.FreeIPs)
			x.leaf("availabilityZone", sn.Zone)
			x.leaf("availabilityZoneId", sn.ZoneID)
			x.leafBool("defaultForAz", false)
			x.leafBool("mapPublicIpOnLaunch", false)
			if len(sn.Tags) > 0 {
				x.tagSet(sn.Tags)
			}
			x.close("item")
		}
		x.close("subnetSet")
		if next != "" {
			x.leaf("nextToken", next)
		}
	}, nil
}

// requireKnown fails when an explicitly named id does not exist, as EC2's Describe calls do.
func requireKnown(ids []string, n int, idAt func(int) string, code, format string) error {
	known := map[string]bool{}
	for i := 0; i < n; i++ {
		known[idAt(i)] = true
	}
	for _, id := range ids {
		if !known[id] {
			return apiErr(400, code, format, id)
		}
	}
	return nil
}

func (s *Server) describeSecurityGroups(p params) (func(x *xmlw), error) {
	ids, names := p.list("GroupId"), p.list("GroupName")
	if err := groupIDs.checkIDs(ids); err != nil {
		return nil, err
	}
	all := s.w.SecurityGroups()
	if err := requireKnown(ids, len(all), func(i int) string { return all[i].ID }, "InvalidGroup.NotFound", "The security group '%s' does not exist"); err != nil {
		return nil, err
	}
	if err := requireKnown(names, len(all), func(i int) string { return all[i].Name }, "InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC"); err != nil {
		return nil, err
	}
	fs := p.filters()
	var out []SecurityGroup
	for _, g := range all {
		if len(ids) > 0 && !contains(ids, g.ID) || len(names) > 0 && !contains(names, g.Name) {
			continue
		}
		ok, err := matchAll(fs, func(n string) ([]string, bool) {
			switch n {
			case "group-id":
				return []string{g.ID}, true
			case "group-name":
				return []string{g.Name}, true
			case "vpc-id":
				return []string{g.VpcID}, true
			case "description":
				return []string{g.Description}, true
			case "owner-id":
				return []string{s.w.opts.AccountID}, true
			}
			return nil, false
		}, g.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, g)
		}
	}
	from, to, next, err := page(p, len(out), 0, 5, 1000)
	if err != nil {
		return nil, err
	}
	owner := s.w.opts.AccountID
	return func(x *xmlw) {
		x.open("securityGroupInfo")
		for _, g := range out[from:to] {
			x.open("item")
			x.leaf("ownerId", owner)
			x.leaf("groupId", g.ID)
			x.leaf("groupName", g.Name)
			x.leaf("groupDescription", g.Description)
			x.leaf("vpcId", g.VpcID)
			x.open("ipPermissions")
			x.close("ipPermissions")
			x.open("ipPermissionsEgress")
			x.close("ipPermissionsEgress")
			if len(g.Tags) > 0 {
				x.tagSet(g.Tags)
			}
			x.close("item")
		}
		x.close("securityGroupInfo")
		if next != "" {
			x.leaf("nextToken", next)
		}
	}, nil
}

func (s *Server) describeImages(p params) (func(x *xmlw), error) {
	ids, owners := p.list("ImageId"), p.list("Owner")
	if err := imageIDs.checkIDs(ids); err != nil {
		return nil, err
	}
	all := s.w.Images()
	if err := requireKnown(ids, len(all), func(i int) string { return all[i].ID }, "InvalidAMIID.NotFound", "The image id '[%s]' does not exist"); err != nil {
		return nil, err
	}
	self := s.w.opts.AccountID
	fs := p.filters()
	var out []Image
	for _, img := range all {
		if len(ids) > 0 && !contains(ids, img.ID) {
			continue
		}
		if len(owners) > 0 && !ownerMatches(owners, img, self) {
			continue
		}
		ok, err := matchAll(fs, func(n string) ([]string, bool) {
			switch n {
			case "image-id":
				return []string{img.ID}, true
			case "name":
				return []string{img.Name}, true
			case "owner-id":
				return []string{img.OwnerID}, true
			case "owner-alias":
				return []string{img.OwnerAlias}, true
			case "architecture":
				return []string{img.Arch}, true
			case "state":
				return []string{"available"}, true
			case "image-type":
				return []string{"machine"}, true
			case "is-public":
				return []string{strconv.FormatBool(img.OwnerAlias == "amazon")}, true
			case "description":
				return []string{img.Description}, true
			}
			return nil, false
		}, img.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, img)
		}
	}
	// Newest first, like most selectors expect to sort anyway; order is stable.
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreationDate.After(out[j].CreationDate) })
	from, to, next, err := page(p, len(out), 0, 5, 1000)
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) {
		x.open("imagesSet")
		for _, img := range out[from:to] {
			x.open("item")
			x.leaf("imageId", img.ID)
			x.leaf("imageLocation", img.OwnerAlias+"/"+img.Name)
			x.leaf("imageState", "available")
			x.leaf("imageOwnerId", img.OwnerID)
			x.leaf("creationDate", img.CreationDate.UTC().Format("2006-01-02T15:04:05.000Z"))
			x.leafBool("isPublic", img.OwnerAlias == "amazon")
			x.leaf("architecture", img.Arch)
			x.leaf("imageType", "machine")
			if img.OwnerAlias != "" {
				x.leaf("imageOwnerAlias", img.OwnerAlias)
			}
			x.leaf("name", img.Name)
			x.leaf("description", img.Description)
			x.leaf("rootDeviceType", "ebs")
			x.leaf("rootDeviceName", "/dev/xvda")
			x.leaf("virtualizationType", "hvm")
			x.leaf("hypervisor", "xen")
			x.leafBool("enaSupport", true)
			x.leaf("platformDetails", "Linux/UNIX")
			x.leaf("bootMode", "uefi-preferred")
			if len(img.Tags) > 0 {
				x.tagSet(img.Tags)
			}
			x.close("item")
		}
		x.close("imagesSet")
		if next != "" {
			x.leaf("nextToken", next)
		}
	}, nil
}

func ownerMatches(owners []string, img Image, self string) bool {
	for _, o := range owners {
		switch {
		case o == "self" && img.OwnerID == self,
			o == img.OwnerID,
			o == img.OwnerAlias && o != "":
			return true
		}
	}
	return false
}

func (s *Server) describeAvailabilityZones(p params) (func(x *xmlw), error) {
	names, zoneIDs := p.list("ZoneName"), p.list("ZoneId")
	fs := p.filters()
	region := s.w.opts.Region
	type az struct{ name, id string }
	var out []az
	for _, z := range s.w.opts.Zones {
		a := az{z, s.w.zoneID(z)}
		if len(names) > 0 && !contains(names, a.name) || len(zoneIDs) > 0 && !contains(zoneIDs, a.id) {
			continue
		}
		ok, err := matchAll(fs, func(n string) ([]string, bool) {
			switch n {
			case "zone-name":
				return []string{a.name}, true
			case "zone-id":
				return []string{a.id}, true
			case "region-name":
				return []string{region}, true
			case "state":
				return []string{"available"}, true
			case "zone-type":
				return []string{"availability-zone"}, true
			case "opt-in-status":
				return []string{"opt-in-not-required"}, true
			}
			return nil, false
		}, nil)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, a)
		}
	}
	return func(x *xmlw) {
		x.open("availabilityZoneInfo")
		for _, a := range out {
			x.open("item")
			x.leaf("zoneName", a.name)
			x.leaf("zoneId", a.id)
			x.leaf("zoneState", "available")
			x.leaf("regionName", region)
			x.leaf("zoneType", "availability-zone")
			x.leaf("optInStatus", "opt-in-not-required")
			x.leaf("groupName", region)
			x.leaf("networkBorderGroup", region)
			x.open("messageSet")
			x.close("messageSet")
			x.close("item")
		}
		x.close("availabilityZoneInfo")
	}, nil
}
