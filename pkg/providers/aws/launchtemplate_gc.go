package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// GarbageCollectLaunchTemplates deletes the launch templates this cluster
// made (tagged with the cluster and a settings hash) that no launch has used
// for Options.LaunchTemplateTTL: templates are keyed by their settings, so
// every node class edit or new AMI leaves one behind. A template unused
// since this process started counts from its creation time. Deleting one
// never affects running instances; a launch that raced the delete finds it
// gone and recreates it. It returns the names deleted.
func (p *Provider) GarbageCollectLaunchTemplates(ctx context.Context) ([]string, error) {
	now := p.clock.Now()
	pg := ec2.NewDescribeLaunchTemplatesPaginator(p.ec2, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.TagCluster), Values: []string{p.cluster.Name}},
		{Name: aws.String("tag-key"), Values: []string{TagLaunchTemplateHash}},
	}})
	var stale []string
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing launch templates: %w", explain(err))
		}
		p.ltMu.Lock()
		for _, lt := range page.LaunchTemplates {
			name := aws.ToString(lt.LaunchTemplateName)
			last, ok := p.ltUsed[name]
			if !ok {
				last = aws.ToTime(lt.CreateTime)
			}
			if now.Sub(last) >= p.opts.LaunchTemplateTTL {
				stale = append(stale, name)
			}
		}
		p.ltMu.Unlock()
	}
	var deleted []string
	for _, name := range stale {
		p.ltMu.Lock()
		// Used since it was listed: keep it.
		if last, ok := p.ltUsed[name]; ok && p.clock.Since(last) < p.opts.LaunchTemplateTTL {
			p.ltMu.Unlock()
			continue
		}
		delete(p.templates, name)
		delete(p.ltUsed, name)
		p.ltMu.Unlock()
		_, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)})
		if err != nil && !IsNotFound(err) {
			return deleted, fmt.Errorf("deleting launch template %s: %w", name, explain(err))
		}
		deleted = append(deleted, name)
	}
	return deleted, nil
}
