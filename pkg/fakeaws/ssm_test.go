package fakeaws_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

func TestSSMAMIParameters(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		param, arch, namePrefix string
	}{
		{"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id", "x86_64", "amazon-eks-node-al2023-x86_64"},
		{"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/standard/recommended/image_id", "arm64", "amazon-eks-node-al2023-arm64"},
		{"/aws/service/bottlerocket/aws-k8s-1.37/x86_64/latest/image_id", "x86_64", "bottlerocket-aws-k8s-1.37-x86_64"},
		{"/aws/service/bottlerocket/aws-k8s-1.37/arm64/latest/image_id", "arm64", "bottlerocket-aws-k8s-1.37-arm64"},
		{"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/nvidia/recommended/image_id", "x86_64", "amazon-eks-node-al2023-x86_64-nvidia-1.37"},
		{"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/nvidia/recommended/image_id", "arm64", "amazon-eks-node-al2023-arm64-nvidia-1.37"},
		{"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/neuron/recommended/image_id", "x86_64", "amazon-eks-node-al2023-x86_64-neuron-1.37"},
		{"/aws/service/bottlerocket/aws-k8s-1.37-nvidia/x86_64/latest/image_id", "x86_64", "bottlerocket-aws-k8s-1.37-nvidia-x86_64"},
		{"/aws/service/bottlerocket/aws-k8s-1.37-nvidia/arm64/latest/image_id", "arm64", "bottlerocket-aws-k8s-1.37-nvidia-arm64"},
		// The two Kubernetes versions before the cluster's.
		{"/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id", "x86_64", "amazon-eks-node-al2023-x86_64-standard-1.36-"},
		{"/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/standard/recommended/image_id", "arm64", "amazon-eks-node-al2023-arm64-standard-1.35-"},
		{"/aws/service/bottlerocket/aws-k8s-1.36/arm64/latest/image_id", "arm64", "bottlerocket-aws-k8s-1.36-arm64"},
		{"/aws/service/bottlerocket/aws-k8s-1.35/x86_64/latest/image_id", "x86_64", "bottlerocket-aws-k8s-1.35-x86_64"},
	}
	for _, tt := range tests {
		t.Run(tt.param, func(t *testing.T) {
			out, err := e.ssm.GetParameter(e.ctx, &ssm.GetParameterInput{Name: aws.String(tt.param)})
			if err != nil {
				t.Fatal(err)
			}
			id := aws.ToString(out.Parameter.Value)
			imgs, err := e.ec2.DescribeImages(e.ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
			if err != nil {
				t.Fatalf("the parameter's image %s is unknown to EC2: %v", id, err)
			}
			img := imgs.Images[0]
			if string(img.Architecture) != tt.arch || len(aws.ToString(img.Name)) < len(tt.namePrefix) || aws.ToString(img.Name)[:len(tt.namePrefix)] != tt.namePrefix {
				t.Fatalf("image %s arch %s", aws.ToString(img.Name), img.Architecture)
			}
			if out.Parameter.LastModifiedDate == nil || aws.ToString(out.Parameter.Name) != tt.param {
				t.Fatalf("parameter %+v", out.Parameter)
			}
		})
	}
	// EKS publishes no arm64 Neuron image.
	for _, name := range []string{"/aws/service/eks/optimized-ami/1.99/amazon-linux-2023/x86_64/standard/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/neuron/recommended/image_id"} {
		_, err := e.ssm.GetParameter(e.ctx, &ssm.GetParameterInput{Name: aws.String(name)})
		var nf *ssmtypes.ParameterNotFound
		if !errors.As(err, &nf) {
			t.Fatalf("unknown parameter %s: %v", name, err)
		}
	}
	e.world.InjectThrottle("ssm:GetParameter", 1)
	if _, err := e.ssm.GetParameter(e.ctx, &ssm.GetParameterInput{Name: aws.String(tests[0].param)}); err != nil {
		t.Fatalf("a throttled GetParameter should be retried: %v", err)
	}
}

func TestSSMGetParameters(t *testing.T) {
	e := newEnv(t)
	known := "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/standard/recommended/image_id"
	out, err := e.ssm.GetParameters(e.ctx, &ssm.GetParametersInput{Names: []string{known, "/missing", known}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Parameters) != 1 || aws.ToString(out.Parameters[0].Name) != known || aws.ToString(out.Parameters[0].Value) == "" ||
		len(out.InvalidParameters) != 1 || out.InvalidParameters[0] != "/missing" {
		t.Fatalf("GetParameters: %+v", out)
	}
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = known
	}
	for name, names := range map[string][]string{"eleven names": eleven, "an empty name": {""}} {
		if _, err := e.ssm.GetParameters(e.ctx, &ssm.GetParametersInput{Names: names}); apiCode(err) != "ValidationException" {
			t.Errorf("%s: %v, want ValidationException", name, err)
		}
	}
	if got := e.world.Stats()["ssm:GetParameters"]; got != 3 {
		t.Errorf("GetParameters calls %d, want 3", got)
	}
}
