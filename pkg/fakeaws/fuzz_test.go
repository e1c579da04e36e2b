package fakeaws_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// The fuzz tests feed each front end (EC2 Query, IAM Query, SQS JSON 1.0,
// SSM JSON 1.1) arbitrary bodies and require, for every input: no panic, an
// answer within hangAfter, no 5xx (no fault is injected), an answer the
// protocol's parser reads to the end, and a world that still answers every
// read call well-formed afterwards — so an input cannot poison later calls,
// as the U+0001 tag once poisoned DescribeInstances (the reads run after
// every call that succeeded; a refused call changes nothing). The seeds run
// in every `go test`; `go test -fuzz=FuzzEC2Query` (and the others) explore
// further.

const hangAfter = 10 * time.Second

// fuzzWorld is a small world with one of everything the inputs can name.
// Placeholders in a body ({instance}, {template}, {subnet}, {group},
// {image}, {queue}, {receipt}) are replaced with those resources' ids.
type fuzzWorld struct {
	srv  *fakeaws.Server
	subs *strings.Replacer
}

func newFuzzWorld(t testing.TB) *fuzzWorld {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	w := fakeaws.NewWorld(fakeaws.Options{Clock: clk, ClusterName: cluster, InterruptionQueue: "interruptions", Seed: 1,
		DefaultCapacity: 3, Roles: []string{"nodes"}})
	srv := fakeaws.NewServer(w)
	img := w.Images()[0]
	sn := w.Subnets()[0]
	sg := w.SecurityGroups()[0]
	lt, err := w.CreateLaunchTemplate(fakeaws.LaunchTemplate{Name: "fuzz", ImageID: img.ID, SecurityGroupIDs: []string{sg.ID}, Data: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.CreateFleet(fakeaws.FleetRequest{Type: "instant", TotalTarget: 1, DefaultCapacityType: "on-demand",
		Overrides: []fakeaws.FleetOverride{{LaunchTemplateID: lt.ID, InstanceType: "m5.large", SubnetID: sn.ID}}})
	if err != nil || len(res.Launches) == 0 {
		t.Fatalf("seeding an instance: %v %+v", err, res)
	}
	if _, err := w.CreateInstanceProfile("fuzz", "/", nil); err != nil {
		t.Fatal(err)
	}
	w.CreateQueue("work", nil)
	if _, err := w.SendMessage("work", "hello"); err != nil {
		t.Fatal(err)
	}
	fw := &fuzzWorld{srv: srv}
	queueURL := "http://fake/123456789012/work"
	fw.subs = strings.NewReplacer("{queue}", queueURL)
	_, body := fw.do(t, "AmazonSQS.ReceiveMessage", `{"QueueUrl":"{queue}","VisibilityTimeout":600}`)
	var recv struct {
		Messages []struct{ ReceiptHandle string }
	}
	if err := json.Unmarshal(body, &recv); err != nil || len(recv.Messages) != 1 {
		t.Fatalf("seeding a receipt: %v %s", err, body)
	}
	fw.subs = strings.NewReplacer("{instance}", res.Launches[0].InstanceIDs[0], "{template}", lt.ID, "{subnet}", sn.ID,
		"{group}", sg.ID, "{image}", img.ID, "{queue}", queueURL, "{receipt}", recv.Messages[0].ReceiptHandle)
	return fw
}

// do serves one request and fails on a panic-free hang; target "" is a
// Query-protocol POST.
func (fw *fuzzWorld) do(t testing.TB, target, body string) (int, []byte) {
	t.Helper()
	body = fw.subs.Replace(body)
	req := httptest.NewRequest(http.MethodPost, "http://fake/", bytes.NewBufferString(body))
	if target == "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req.Header.Set("X-Amz-Target", target)
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	}
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rr := httptest.NewRecorder()
		fw.srv.ServeHTTP(rr, req)
		done <- rr
	}()
	select {
	case rr := <-done:
		return rr.Code, rr.Body.Bytes()
	case <-time.After(hangAfter):
		t.Fatalf("request hung for %v: %s %.300q", hangAfter, target, body)
		return 0, nil
	}
}

func wellFormedXML(t testing.TB, what string, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	root := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: answer is not XML (%v): %.500q", what, err, b)
		}
		if _, ok := tok.(xml.StartElement); ok {
			root = true
		}
	}
	if !root {
		t.Fatalf("%s: answer has no element: %.500q", what, b)
	}
}

func wellFormedJSON(t testing.TB, what string, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("%s: answer is not JSON: %.500q", what, b)
	}
}

func noServerError(t testing.TB, what string, status int, b []byte) {
	t.Helper()
	if status >= 500 {
		t.Fatalf("%s: status %d with no fault injected: %.500q", what, status, b)
	}
}

// readsStillWork replays the read calls of every front end after a call
// that succeeded (status 2xx); they must all answer 200 with a well-formed
// body whatever the fuzzed call changed.
func (fw *fuzzWorld) readsStillWork(t testing.TB, status int) {
	t.Helper()
	if status >= 300 {
		return
	}
	for _, q := range []string{
		"Action=DescribeInstances&Version=2016-11-15",
		"Action=DescribeLaunchTemplates&Version=2016-11-15",
		"Action=DescribeSubnets&Version=2016-11-15",
		"Action=DescribeSecurityGroups&Version=2016-11-15",
		"Action=DescribeImages&Version=2016-11-15",
		"Action=DescribeInstanceTypes&Version=2016-11-15",
		"Action=DescribeSpotPriceHistory&Version=2016-11-15",
		"Action=ListInstanceProfiles&Version=2010-05-08",
		"Action=GetInstanceProfile&Version=2010-05-08&InstanceProfileName=fuzz",
	} {
		status, b := fw.do(t, "", q)
		wellFormedXML(t, "read "+q, b)
		if status != 200 && !(strings.Contains(q, "GetInstanceProfile") && status == 404) {
			t.Fatalf("read %s after the fuzzed call: status %d %.500q", q, status, b)
		}
	}
	for _, c := range []struct{ target, body string }{
		{"AmazonSQS.ListQueues", `{}`},
		{"AmazonSQS.GetQueueAttributes", `{"QueueUrl":"http://fake/123456789012/interruptions","AttributeNames":["All"]}`},
		{"AmazonSQS.ReceiveMessage", `{"QueueUrl":"http://fake/123456789012/interruptions","MaxNumberOfMessages":10,"MessageAttributeNames":["All"],"MessageSystemAttributeNames":["All"]}`},
		{"AmazonSSM.GetParameters", `{"Names":["/aws/service/bottlerocket/aws-k8s-1.37/arm64/latest/image_id"]}`},
	} {
		status, b := fw.do(t, c.target, c.body)
		wellFormedJSON(t, "read "+c.target, b)
		if status != 200 && !(c.target != "AmazonSSM.GetParameters" && status == 400) {
			t.Fatalf("read %s after the fuzzed call: status %d %.500q", c.target, status, b)
		}
	}
}

func FuzzEC2Query(f *testing.F) {
	for _, s := range []string{
		"Action=DescribeInstances&Version=2016-11-15",
		"Action=DescribeInstances&Version=2016-11-15&InstanceId.1={instance}",
		"Action=DescribeInstances&Version=2016-11-15&InstanceId.1=i-nope",
		"Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=private-dns-name&Filter.1.Value.1=ip-*&Filter.2.Name=launch-time&Filter.2.Value.1=2026-*",
		"Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=network-interface.subnet-id&Filter.1.Value.1={subnet}&MaxResults=5",
		"Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag%3Anodesmith.sh%2Fcluster&Filter.1.Value.1=*&NextToken=nt-1",
		"Action=CreateTags&Version=2016-11-15&ResourceId.1={instance}&Tag.1.Key=note&Tag.1.Value=bell%01ring%00%EF%BF%BE%FF",
		"Action=CreateTags&Version=2016-11-15&ResourceId.1={subnet}&ResourceId.2={group}&Tag.1.Key=a&Tag.1.Value=%3C%26%3E",
		"Action=DeleteTags&Version=2016-11-15&ResourceId.1={instance}&Tag.1.Key=note",
		"Action=DeleteTags&Version=2016-11-15&ResourceId.1={image}",
		"Action=TerminateInstances&Version=2016-11-15&InstanceId.1={instance}",
		"Action=CreateFleet&Version=2016-11-15&Type=instant&ClientToken=t1&TargetCapacitySpecification.TotalTargetCapacity=2&TargetCapacitySpecification.DefaultTargetCapacityType=spot&SpotOptions.AllocationStrategy=price-capacity-optimized&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId={template}&LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version=%24Latest&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large&LaunchTemplateConfigs.1.Overrides.1.SubnetId={subnet}&TagSpecification.1.ResourceType=instance&TagSpecification.1.Tag.1.Key=k&TagSpecification.1.Tag.1.Value=v",
		"Action=CreateFleet&Version=2016-11-15&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=99999999&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=fuzz&LaunchTemplateConfigs.1.Overrides.1.InstanceType=c5.large&LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone=us-east-1b&LaunchTemplateConfigs.1.Overrides.1.WeightedCapacity=0.001",
		"Action=CreateLaunchTemplate&Version=2016-11-15&LaunchTemplateName=x&LaunchTemplateData.ImageId={image}&LaunchTemplateData.UserData=aGVsbG8%3D&LaunchTemplateData.SecurityGroupId.1={group}&TagSpecification.1.ResourceType=launch-template&TagSpecification.1.Tag.1.Key=k&TagSpecification.1.Tag.1.Value=%01",
		"Action=DescribeLaunchTemplates&Version=2016-11-15&LaunchTemplateId.1={template}&Filter.1.Name=launch-template-name&Filter.1.Value.1=f%5C*",
		"Action=DeleteLaunchTemplate&Version=2016-11-15&LaunchTemplateName=fuzz",
		"Action=DescribeInstanceTypes&Version=2016-11-15&Filter.1.Name=vcpu-info.default-cores&Filter.1.Value.1=1&MaxResults=5",
		"Action=DescribeInstanceTypeOfferings&Version=2016-11-15&LocationType=availability-zone-id&Filter.1.Name=location&Filter.1.Value.1=use1-az%3F",
		"Action=DescribeSpotPriceHistory&Version=2016-11-15&InstanceType.1=m5.large&AvailabilityZone=us-east-1a",
		"Action=DescribeSubnets&Version=2016-11-15&SubnetId.1={subnet}&Filter.1.Name=tag-key&Filter.1.Value.1=*",
		"Action=DescribeSecurityGroups&Version=2016-11-15&GroupName.1=default",
		"Action=DescribeImages&Version=2016-11-15&Owner.1=amazon&Filter.1.Name=name&Filter.1.Value.1=*al2023*",
		"Action=DescribeAvailabilityZones&Version=2016-11-15&ZoneName.1=us-east-1a",
		"Action=DescribeInstances&DryRun=true",
		"Action=Nope",
		"%zz=1&Action",
		"Filter.1.Name=a&Filter.99999999.Name=b&Filter.0.Name=c&Filter.01.Name=d&Action=DescribeInstances",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fw := newFuzzWorld(t)
		status, b := fw.do(t, "", body)
		noServerError(t, "EC2", status, b)
		wellFormedXML(t, "EC2", b)
		fw.readsStillWork(t, status)
	})
}

func FuzzIAMQuery(f *testing.F) {
	for _, s := range []string{
		"Action=CreateInstanceProfile&Version=2010-05-08&InstanceProfileName=p&Path=%2Fa%2F&Tags.member.1.Key=k&Tags.member.1.Value=v",
		"Action=CreateInstanceProfile&Version=2010-05-08&InstanceProfileName=has%20space&Path=a",
		"Action=GetInstanceProfile&Version=2010-05-08&InstanceProfileName=fuzz",
		"Action=ListInstanceProfiles&Version=2010-05-08&PathPrefix=%2F&MaxItems=1&Marker=a",
		"Action=AddRoleToInstanceProfile&Version=2010-05-08&InstanceProfileName=fuzz&RoleName=nodes",
		"Action=RemoveRoleFromInstanceProfile&Version=2010-05-08&InstanceProfileName=fuzz&RoleName=nodes",
		"Action=TagInstanceProfile&Version=2010-05-08&InstanceProfileName=fuzz&Tags.member.1.Key=k&Tags.member.1.Value=%01",
		"Action=DeleteInstanceProfile&Version=2010-05-08&InstanceProfileName=fuzz",
		"Action=GetRole&Version=2010-05-08&RoleName=nodes",
		"Action=GetRole&Version=2010-05-08&RoleName=" + strings.Repeat("r", 70),
		"Action=ListRoles&Version=2010-05-08",
		"Version=2010-05-08",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fw := newFuzzWorld(t)
		status, b := fw.do(t, "", body)
		noServerError(t, "IAM", status, b)
		wellFormedXML(t, "IAM", b)
		fw.readsStillWork(t, status)
	})
}

func FuzzSQSJSON(f *testing.F) {
	for _, s := range []struct{ op, body string }{
		{"CreateQueue", `{"QueueName":"q1","Attributes":{"VisibilityTimeout":"43200","RedrivePolicy":"{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:123456789012:work\",\"maxReceiveCount\":2}"}}`},
		{"CreateQueue", `{"QueueName":"work","Attributes":{"DelaySeconds":"5"}}`},
		{"GetQueueUrl", `{"QueueName":"work"}`},
		{"ListQueues", `{"QueueNamePrefix":"w","MaxResults":1,"NextToken":"MQ"}`},
		{"DeleteQueue", `{"QueueUrl":"{queue}"}`},
		{"GetQueueAttributes", `{"QueueUrl":"{queue}","AttributeNames":["All","Colour"]}`},
		{"SetQueueAttributes", `{"QueueUrl":"{queue}","Attributes":{"MessageRetentionPeriod":"60","Policy":"{}"}}`},
		{"SendMessage", `{"QueueUrl":"{queue}","MessageBody":"hi \u0001","DelaySeconds":900,"MessageAttributes":{"n":{"DataType":"Number","StringValue":"1e126"},"b":{"DataType":"Binary","BinaryValue":"AAE="}}}`},
		{"SendMessageBatch", `{"QueueUrl":"{queue}","Entries":[{"Id":"a","MessageBody":"x"},{"Id":"a b","MessageBody":"y"}]}`},
		{"ReceiveMessage", `{"QueueUrl":"{queue}","MaxNumberOfMessages":10,"VisibilityTimeout":0,"WaitTimeSeconds":20,"MessageAttributeNames":["a.*"],"AttributeNames":["All"]}`},
		{"DeleteMessage", `{"QueueUrl":"{queue}","ReceiptHandle":"{receipt}"}`},
		{"DeleteMessageBatch", `{"QueueUrl":"{queue}","Entries":[{"Id":"1","ReceiptHandle":"{receipt}"},{"Id":"2","ReceiptHandle":"bogus"}]}`},
		{"ChangeMessageVisibility", `{"QueueUrl":"{queue}","ReceiptHandle":"{receipt}","VisibilityTimeout":43200}`},
		{"ChangeMessageVisibilityBatch", `{"QueueUrl":"{queue}","Entries":[{"Id":"1","ReceiptHandle":"{receipt}","VisibilityTimeout":1}]}`},
		{"PurgeQueue", `{"QueueUrl":"{queue}"}`},
		{"TagQueue", `{}`},
		{"SendMessage", `not json`},
		{"SendMessage", `{"QueueUrl":null,"MessageBody":["x"]}`},
	} {
		f.Add(s.op, s.body)
	}
	f.Fuzz(func(t *testing.T, op, body string) {
		fw := newFuzzWorld(t)
		status, b := fw.do(t, "AmazonSQS."+op, body)
		noServerError(t, "SQS "+op, status, b)
		wellFormedJSON(t, "SQS "+op, b)
		fw.readsStillWork(t, status)
	})
}

func FuzzSSMJSON(f *testing.F) {
	for _, s := range []struct{ op, body string }{
		{"GetParameter", `{"Name":"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id"}`},
		{"GetParameter", `{"Name":""}`},
		{"GetParameter", `{"Name":"/missing","WithDecryption":true}`},
		{"GetParameters", `{"Names":["/a","/b","/aws/service/bottlerocket/aws-k8s-1.37/x86_64/latest/image_id"]}`},
		{"GetParameters", `{"Names":[]}`},
		{"GetParametersByPath", `{"Path":"/aws"}`},
		{"GetParameter", `[1,2,3]`},
	} {
		f.Add(s.op, s.body)
	}
	f.Fuzz(func(t *testing.T, op, body string) {
		fw := newFuzzWorld(t)
		status, b := fw.do(t, "AmazonSSM."+op, body)
		noServerError(t, "SSM "+op, status, b)
		wellFormedJSON(t, "SSM "+op, b)
		fw.readsStillWork(t, status)
	})
}
