package fakeaws

import "strings"

// idKind is one EC2 resource id family: its prefix and the codes EC2 answers
// for an id of that family that is malformed or unknown.
type idKind struct {
	prefix    string // "i", "ami", …
	malformed string
	notFound  string
	// noun names the resource in a not-found message.
	noun string
}

var (
	instanceIDs    = idKind{"i", "InvalidInstanceID.Malformed", "InvalidInstanceID.NotFound", "instance ID"}
	imageIDs       = idKind{"ami", "InvalidAMIID.Malformed", "InvalidAMIID.NotFound", "image id"}
	groupIDs       = idKind{"sg", "InvalidGroupId.Malformed", "InvalidGroup.NotFound", "security group"}
	subnetIDs      = idKind{"subnet", "InvalidSubnetID.Malformed", "InvalidSubnetID.NotFound", "subnet ID"}
	templateIDs    = idKind{"lt", "InvalidLaunchTemplateId.Malformed", "InvalidLaunchTemplateId.NotFound", "launch template ID"}
	reservationIDs = idKind{"cr", "InvalidCapacityReservationId.Malformed", "InvalidCapacityReservationId.NotFound", "capacity reservation ID"}
)

// taggable are the id families CreateTags and DeleteTags accept.
var taggable = []idKind{instanceIDs, imageIDs, groupIDs, subnetIDs, templateIDs}

// wellFormed reports whether id is prefix-<8 or 17 lower-case hex digits>,
// the two shapes EC2 has issued.
func (k idKind) wellFormed(id string) bool {
	rest, ok := strings.CutPrefix(id, k.prefix+"-")
	if !ok || len(rest) != 8 && len(rest) != 17 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// malformedErr is EC2's answer to an id of this family that cannot be one.
// The instance form carries no hint; the others name the expected prefix.
func (k idKind) malformedErr(id string) *APIError {
	if k.prefix == "i" {
		return apiErr(400, k.malformed, "Invalid id: \"%s\"", id)
	}
	return apiErr(400, k.malformed, "Invalid id: \"%s\" (expecting \"%s-...\")", id, k.prefix)
}

// checkIDs fails on the first id that is not well-formed.
func (k idKind) checkIDs(ids []string) error {
	for _, id := range ids {
		if !k.wellFormed(id) {
			return k.malformedErr(id)
		}
	}
	return nil
}

// taggableKind finds the family of a resource id by its prefix.
func taggableKind(id string) (idKind, bool) {
	for _, k := range taggable {
		if strings.HasPrefix(id, k.prefix+"-") {
			return k, true
		}
	}
	return idKind{}, false
}

// checkTaggableIDs validates resource ids as CreateTags and DeleteTags do: a
// known family with a bad shape is malformed, an unknown family is InvalidID.
func checkTaggableIDs(ids []string) error {
	for _, id := range ids {
		k, ok := taggableKind(id)
		if !ok {
			return apiErr(400, "InvalidID", "The ID '%s' is not valid", id)
		}
		if !k.wellFormed(id) {
			return k.malformedErr(id)
		}
	}
	return nil
}
