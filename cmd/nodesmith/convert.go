package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/nodesmith/nodesmith/pkg/convert"
)

func newConvertCommand() *cobra.Command {
	var file, nodeRole string
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "convert -f FILE",
		Short: "Turn Karpenter NodePools and EC2NodeClasses into Nodesmith's",
		Long: `convert reads Karpenter karpenter.sh/v1beta1 and v1 NodePools and
karpenter.k8s.aws/v1beta1 and v1 EC2NodeClasses (multi-document YAML, or a
List) and writes the Nodesmith NodePools and EC2NodeClasses that launch the
same nodes:

  - labels: karpenter.sh/capacity-type becomes nodesmith.sh/capacity-type,
    karpenter.k8s.aws/instance-* becomes aws.nodesmith.sh/instance-*;
  - v1beta1 fields move where v1 and Nodesmith keep them: WhenUnderutilized
    is WhenEmptyOrUnderutilized, disruption.expireAfter moves into the
    template, the pool's kubelet block moves into its EC2NodeClass (a class
    two pools with different kubelet settings share is copied), a
    nodeClassRef without group points at aws.nodesmith.sh, amiFamily without
    amiSelectorTerms becomes an alias;
  - selector tags are AWS tags and stay as written (karpenter.sh/discovery);
  - spec.role (or spec.instanceProfile) stays as written unless --node-role
    names the role to use instead; a role examples/terraform's controller
    policy would not let Nodesmith pass is reported, with the fix.

Anything without a Nodesmith equivalent is reported on stderr and as a
comment above its object; nothing is dropped silently. Documents that are
not Karpenter's pass through unchanged. The output is ready for kubectl apply.`,
		Example: `  # convert the manifests you apply today
  nodesmith convert -f karpenter.yaml > nodesmith.yaml
  kubectl apply -f nodesmith.yaml

  # nodes get the role examples/terraform creates, not Karpenter's
  nodesmith convert -f karpenter.yaml --node-role NodesmithNodeRole-my-cluster

  # straight from the cluster
  kubectl get nodepools.karpenter.sh,ec2nodeclasses.karpenter.k8s.aws -o yaml | nodesmith convert -f -

  # see what Nodesmith would launch with them for your pods, before installing it
  nodesmith plan --nodepools karpenter.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			var r io.Reader = cmd.InOrStdin()
			if file != "-" {
				fh, err := os.Open(file)
				if err != nil {
					return err
				}
				defer fh.Close()
				r = fh
			}
			res, err := convert.ConvertWith(r, convert.Options{NodeRole: nodeRole})
			if err != nil {
				return err
			}
			for _, w := range res.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			if out.value == outJSON {
				return convert.WriteJSON(cmd.OutOrStdout(), res)
			}
			return convert.WriteYAML(cmd.OutOrStdout(), res)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "manifest file to convert, - for stdin")
	_ = cmd.MarkFlagRequired("filename")
	cmd.Flags().StringVar(&nodeRole, "node-role", "", "IAM role every converted EC2NodeClass uses (spec.role), in place of Karpenter's node role or instance profile")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	out = addOutputFlag(cmd, outYAML, outYAML, outJSON)
	return cmd
}
