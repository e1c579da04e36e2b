// Package nodeclass keeps each EC2NodeClass's status true: the subnets,
// security groups, images and instance profile its selectors resolve to,
// and one condition per part plus Ready, whose reason and message say what
// to fix ("no subnets matched selector …: check the nodesmith.sh/discovery
// tag"). Resolution is the AWS provider's (Resolver); this package only
// writes what it reports, and looks again every minute because the cloud
// changes without telling the API server.
//
// It imports controller-runtime and the AWS provider's result types.
package nodeclass
