package tfpolicy

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
)

// sdkInput matches an aws-sdk-go-v2 operation input type, e.g.
// *ec2.CreateFleetInput: every AWS call the code makes names one.
var sdkInput = regexp.MustCompile(`\*(ec2|iam|ssm|sqs|eks|pricing)\.([A-Z]\w*)Input\b`)

// Implied are the permissions AWS checks beside the called action: a fleet
// launch authorizes RunInstances, tagging on create authorizes CreateTags,
// and handing the node role to EC2 (a profile's role, a launch with a
// profile) authorizes PassRole.
var Implied = map[string][]string{
	"ec2:CreateFleet":              {"ec2:RunInstances", "ec2:CreateTags", "iam:PassRole"},
	"ec2:CreateLaunchTemplate":     {"ec2:CreateTags"},
	"iam:CreateInstanceProfile":    {"iam:TagInstanceProfile"},
	"iam:AddRoleToInstanceProfile": {"iam:PassRole"},
}

// CalledActions lists the IAM actions of every SDK operation whose input
// type the non-test Go files under roots name, with the implied ones.
func CalledActions(roots ...string) ([]string, error) {
	seen := map[string]bool{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range sdkInput.FindAllStringSubmatch(string(src), -1) {
				a := iampolicy.PermissionFor(m[1] + ":" + m[2])
				seen[a] = true
				for _, i := range Implied[a] {
					seen[i] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return out, nil
}

// MissingActions returns the actions no Allow statement of p names.
func MissingActions(p *iampolicy.Policy, actions []string) []string {
	var out []string
	for _, a := range actions {
		granted := false
		for _, pattern := range p.Actions() {
			granted = granted || iampolicy.Wildcard(strings.ToLower(pattern), strings.ToLower(a))
		}
		if !granted {
			out = append(out, a)
		}
	}
	return out
}

// readOnly reports whether an action only reads (Describe*, Get*, List*,
// ReceiveMessage).
func readOnly(action string) bool {
	_, op, _ := strings.Cut(action, ":")
	for _, p := range []string{"Describe", "Get", "List"} {
		if strings.HasPrefix(op, p) {
			return true
		}
	}
	return op == "ReceiveMessage"
}

// Problems lists least-privilege violations of p: wildcard actions, and
// write actions allowed on every resource ("*") without a tag condition.
func Problems(p *iampolicy.Policy) []string {
	var out []string
	for _, st := range p.Statement {
		if st.Effect != "Allow" {
			continue
		}
		if len(st.NotAction) > 0 || len(st.NotResource) > 0 {
			out = append(out, st.Sid+": NotAction/NotResource grant more than they name")
		}
		anyResource := false
		for _, r := range st.Resource {
			anyResource = anyResource || r == "*"
		}
		tagged := false
		for _, keys := range st.Condition {
			for k := range keys {
				l := strings.ToLower(k)
				tagged = tagged || strings.HasPrefix(l, "aws:requesttag/") || strings.HasPrefix(l, "aws:resourcetag/")
			}
		}
		for _, a := range st.Action {
			if strings.Contains(a, "*") {
				out = append(out, st.Sid+": wildcard action "+a)
			}
			if anyResource && !readOnly(a) && !tagged {
				out = append(out, st.Sid+": write action "+a+" on every resource without a tag condition")
			}
		}
	}
	return out
}
