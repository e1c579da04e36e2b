package aws

import (
	"slices"
	"testing"
)

func TestAliasImages(t *testing.T) {
	tests := []struct {
		alias   string
		want    []string // parameter names, in order
		wantErr bool
	}{
		{alias: "al2023@latest", want: []string{
			"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/neuron/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/standard/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/nvidia/recommended/image_id",
		}},
		{alias: "AL2023@v20261101", want: []string{
			"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.37-v20261101/image_id",
			"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.37-v20261101/image_id",
			"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.37-v20261101/image_id",
			"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.37-v20261101/image_id",
			"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.37-v20261101/image_id",
		}},
		{alias: "bottlerocket@v1.50.0", want: []string{
			"/aws/service/bottlerocket/aws-k8s-1.37/x86_64/1.50.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.37-nvidia/x86_64/1.50.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.37/arm64/1.50.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.37-nvidia/arm64/1.50.0/image_id",
		}},
		{alias: "windows2022@latest", wantErr: true},
		{alias: "al2023", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.alias, func(t *testing.T) {
			imgs, err := aliasImages(tt.alias, "1.37")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			var got []string
			for _, img := range imgs {
				got = append(got, img.parameter)
				if len(img.requirements) == 0 || img.requirements[0].Values[0] != img.arch {
					t.Errorf("%s: requirements %v do not start with its architecture %s", img.parameter, img.requirements, img.arch)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("parameters:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
