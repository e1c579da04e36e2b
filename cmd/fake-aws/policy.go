package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
	"github.com/nodesmith/nodesmith/pkg/fakeaws/tfpolicy"
)

// extraFlags are the flags of the live-market and policy modes.
type extraFlags struct {
	market    *string
	policyTF  *string
	policyDoc *string
}

func addExtraFlags(fs *flag.FlagSet) extraFlags {
	return extraFlags{
		market: fs.String("market", "snapshot", "snapshot: offerings and prices follow the catalog snapshot's rule; "+
			"drifted: some types leave a zone or appear in a new one, spot and on-demand prices move (seeded by --seed), "+
			"so a controller pricing from the snapshot instead of live data shows"),
		policyTF: fs.String("policy-from-terraform", "", "authorize every request against the controller policy of this Terraform directory "+
			"(e.g. examples/terraform), rendered for --cluster-name and --region; denied calls answer UnauthorizedOperation / AccessDenied"),
		policyDoc: fs.String("policy", "", "authorize every request against this IAM policy document (JSON)"),
	}
}

// applyMarket drifts the world's market when asked.
func (x extraFlags) applyMarket(o *fakeaws.Options) error {
	switch *x.market {
	case "snapshot":
	case "drifted":
		o.Specs = fakeaws.DriftMarket(o.Specs, o.Zones, o.Seed)
	default:
		return fmt.Errorf("--market %q: want snapshot or drifted", *x.market)
	}
	return nil
}

// loadPolicy reads the policy to enforce, if any.
func (x extraFlags) loadPolicy(cluster, region, account string) (*iampolicy.Policy, error) {
	switch {
	case *x.policyTF != "" && *x.policyDoc != "":
		return nil, fmt.Errorf("--policy-from-terraform and --policy are exclusive")
	case *x.policyTF != "":
		if cluster == "" {
			return nil, fmt.Errorf("--policy-from-terraform needs --cluster-name (the policy is scoped to the cluster's tag)")
		}
		p, _, err := tfpolicy.Render(*x.policyTF, tfpolicy.Values{Variables: map[string]string{"cluster_name": cluster}, AccountID: account, Region: region})
		if err != nil {
			return nil, fmt.Errorf("rendering the policy of %s: %w", *x.policyTF, err)
		}
		return p, nil
	case *x.policyDoc != "":
		doc, err := os.ReadFile(*x.policyDoc)
		if err != nil {
			return nil, err
		}
		return iampolicy.Parse(doc)
	}
	return nil, nil
}
