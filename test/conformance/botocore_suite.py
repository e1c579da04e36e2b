"""Drive cmd/fake-aws with botocore, a client whose parsers nobody here wrote.

Every EC2, IAM, SQS and SSM operation Nodesmith calls, the other operations
the fake serves, and the error cases AWS documents. Each check prints one
JSON line {"check", "ok", "detail"}; conformance_test.go reports them. The
exit status is 1 when any check fails.

FAKE_AWS_ENDPOINT names the server. The fake is started with
--cluster-name conformance --roles conformance-nodes and instances that boot
at once.
"""

import base64
import hashlib
import json
import os
import struct
import sys
import traceback
from datetime import timezone

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ["FAKE_AWS_ENDPOINT"]
REGION = "us-east-1"
CLUSTER = "conformance"
NODE_ROLE = "conformance-nodes"
DISCOVERY = "nodesmith.sh/discovery"
AL2023_X86 = "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id"
AL2023_ARM = "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/standard/recommended/image_id"
BOTTLEROCKET_X86 = "/aws/service/bottlerocket/aws-k8s-1.37/x86_64/latest/image_id"
# The accelerated variants an al2023 or bottlerocket alias resolves besides the standard image.
VARIANT_PARAMS = [
    "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
    "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/nvidia/recommended/image_id",
    "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/neuron/recommended/image_id",
    "/aws/service/bottlerocket/aws-k8s-1.37-nvidia/x86_64/latest/image_id",
    "/aws/service/bottlerocket/aws-k8s-1.37-nvidia/arm64/latest/image_id",
]
# The images EKS keeps publishing for the two Kubernetes versions before the cluster's.
PREVIOUS_PARAMS = [
    "/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/recommended/image_id" % (v, arch) for v in ("1.36", "1.35") for arch in ("x86_64", "arm64")
] + [
    "/aws/service/bottlerocket/aws-k8s-%s/%s/latest/image_id" % (v, arch) for v in ("1.36", "1.35") for arch in ("x86_64", "arm64")
]

failures = 0


def check(name, ok, detail=""):
    global failures
    if not ok:
        failures += 1
    print(json.dumps({"check": name, "ok": bool(ok), "detail": str(detail)[:600]}), flush=True)


def call(name, fn, pred=lambda r: True, detail=None):
    """Run fn; the check passes when it returns and pred holds. Returns the result or None."""
    try:
        r = fn()
    except Exception as e:  # any failure, parse errors included, fails the check
        check(name, False, "%s: %s" % (type(e).__name__, e))
        return None
    try:
        ok = pred(r)
    except Exception as e:
        check(name, False, "predicate raised %s: %s; response %s" % (type(e).__name__, e, strip(r)))
        return r
    check(name, ok, detail(r) if detail and not ok else ("" if ok else strip(r)))
    return r


def error(name, fn, code, exception=None, status=None):
    """The call must fail with this error code (as botocore reports it), and
    with the modelled exception class and HTTP status when given."""
    try:
        r = fn()
    except ClientError as e:
        got = e.response.get("Error", {}).get("Code")
        got_status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        ok = got == code
        if exception is not None:
            ok = ok and type(e).__name__ == exception
        if status is not None:
            ok = ok and got_status == status
        check(name, ok, "got %s (%s, HTTP %s): %s" % (got, type(e).__name__, got_status, e))
        return
    except Exception as e:
        check(name, False, "%s: %s" % (type(e).__name__, e))
        return
    check(name, False, "no error; response %s" % strip(r))


def strip(r):
    if isinstance(r, dict):
        r = {k: v for k, v in r.items() if k != "ResponseMetadata"}
    return r


def session_clients():
    session = boto3.session.Session(aws_access_key_id="fake", aws_secret_access_key="fake", region_name=REGION)
    strict = Config(retries={"mode": "standard", "max_attempts": 1})
    # botocore validates types and minimums on the client; the error cases
    # that must reach the server go through clients that skip that.
    loose = Config(retries={"mode": "standard", "max_attempts": 1}, parameter_validation=False)

    def pair(service):
        return (session.client(service, endpoint_url=ENDPOINT, config=strict),
                session.client(service, endpoint_url=ENDPOINT, config=loose))

    return pair("ec2"), pair("iam"), pair("sqs"), pair("ssm")


def tags_of(resource):
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def sqs_attributes_md5(attrs):
    """MD5OfMessageAttributes as the SQS developer guide defines it,
    computed here independently of the fake."""
    h = hashlib.md5()
    for name in sorted(attrs):
        a = attrs[name]
        for part in (name.encode(), a["DataType"].encode()):
            h.update(struct.pack(">I", len(part)) + part)
        if "BinaryValue" in a:
            h.update(b"\x02")
            v = a["BinaryValue"]
        else:
            h.update(b"\x01")
            v = a["StringValue"].encode()
        h.update(struct.pack(">I", len(v)) + v)
    return h.hexdigest()


def ec2_suite(ec2, ec2_loose, ssm):
    zones = call("ec2 DescribeAvailabilityZones", lambda: ec2.describe_availability_zones(),
                 lambda r: [z["ZoneName"] for z in r["AvailabilityZones"]] == ["us-east-1a", "us-east-1b", "us-east-1c"]
                 and all(z["ZoneId"].startswith("use1-az") for z in r["AvailabilityZones"]))

    disc = [{"Name": "tag:" + DISCOVERY, "Values": [CLUSTER]}]
    subnets = call("ec2 DescribeSubnets by discovery tag", lambda: ec2.describe_subnets(Filters=disc),
                   lambda r: len(r["Subnets"]) == 3 and {s["AvailabilityZone"] for s in r["Subnets"]} == {"us-east-1a", "us-east-1b", "us-east-1c"})
    subnet_ids = sorted(s["SubnetId"] for s in subnets["Subnets"]) if subnets else []
    if subnet_ids:
        call("ec2 DescribeSubnets by id", lambda: ec2.describe_subnets(SubnetIds=subnet_ids[:1]),
             lambda r: [s["SubnetId"] for s in r["Subnets"]] == subnet_ids[:1] and r["Subnets"][0]["AvailableIpAddressCount"] > 0)
        call("ec2 DescribeSubnets subnet-id and tag-key filters",
             lambda: ec2.describe_subnets(Filters=[{"Name": "subnet-id", "Values": subnet_ids}, {"Name": "tag-key", "Values": [DISCOVERY]}]),
             lambda r: len(r["Subnets"]) == 3)
    call("ec2 DescribeSubnets paginator", lambda: [s for p in ec2.get_paginator("describe_subnets").paginate(PaginationConfig={"PageSize": 5}) for s in p["Subnets"]],
         lambda r: len(r) == 4)

    groups = call("ec2 DescribeSecurityGroups by discovery tag", lambda: ec2.describe_security_groups(Filters=disc),
                  lambda r: len(r["SecurityGroups"]) == 1 and r["SecurityGroups"][0]["GroupName"] == CLUSTER + "-node")
    sg = groups["SecurityGroups"][0]["GroupId"] if groups else None
    if sg:
        call("ec2 DescribeSecurityGroups group-id filter", lambda: ec2.describe_security_groups(Filters=[{"Name": "group-id", "Values": [sg]}]),
             lambda r: [g["GroupId"] for g in r["SecurityGroups"]] == [sg])
        call("ec2 DescribeSecurityGroups by id", lambda: ec2.describe_security_groups(GroupIds=[sg]), lambda r: len(r["SecurityGroups"]) == 1)
    call("ec2 DescribeSecurityGroups group-name filter", lambda: ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["default"]}]),
         lambda r: len(r["SecurityGroups"]) == 1)

    images = call("ec2 DescribeImages by owner and name", lambda: ec2.describe_images(Owners=["amazon"], Filters=[{"Name": "name", "Values": ["amazon-eks-node-al2023-*-standard-1.37-*"]}]),
                  lambda r: sorted(i["Architecture"] for i in r["Images"]) == ["arm64", "x86_64"] and all(i["State"] == "available" for i in r["Images"]))
    param = call("ssm GetParameter AL2023 x86_64", lambda: ssm.get_parameter(Name=AL2023_X86),
                 lambda r: r["Parameter"]["Value"].startswith("ami-") and r["Parameter"]["Name"] == AL2023_X86 and "LastModifiedDate" in r["Parameter"])
    ami = param["Parameter"]["Value"] if param else None
    if ami:
        call("ec2 DescribeImages resolves the SSM parameter", lambda: ec2.describe_images(ImageIds=[ami]),
             lambda r: r["Images"][0]["Architecture"] == "x86_64" and r["Images"][0]["Name"].startswith("amazon-eks-node-al2023-x86_64"))
    call("ssm GetParameter Bottlerocket", lambda: ssm.get_parameter(Name=BOTTLEROCKET_X86), lambda r: r["Parameter"]["Value"].startswith("ami-"))
    call("ssm GetParameters accelerated variants", lambda: ssm.get_parameters(Names=VARIANT_PARAMS),
         lambda r: sorted(p["Name"] for p in r["Parameters"]) == sorted(VARIANT_PARAMS) and r["InvalidParameters"] == []
         and all(p["Value"].startswith("ami-") for p in r["Parameters"]))
    prev = call("ssm GetParameters previous Kubernetes versions", lambda: ssm.get_parameters(Names=PREVIOUS_PARAMS),
                lambda r: sorted(p["Name"] for p in r["Parameters"]) == sorted(PREVIOUS_PARAMS) and r["InvalidParameters"] == []
                and len({p["Value"] for p in r["Parameters"]}) == len(PREVIOUS_PARAMS))
    if prev:
        ids = [p["Value"] for p in prev["Parameters"] if "amazon-linux-2023/x86_64" in p["Name"] and "/1.36/" in p["Name"]]
        call("ec2 DescribeImages resolves a previous version's parameter", lambda: ec2.describe_images(ImageIds=ids),
             lambda r: r["Images"][0]["Name"].startswith("amazon-eks-node-al2023-x86_64-standard-1.36-"))
    call("ssm GetParameters", lambda: ssm.get_parameters(Names=[AL2023_X86, AL2023_ARM, "/nodesmith/missing"]),
         lambda r: sorted(p["Name"] for p in r["Parameters"]) == sorted([AL2023_X86, AL2023_ARM]) and r["InvalidParameters"] == ["/nodesmith/missing"])

    lt = call("ec2 CreateLaunchTemplate", lambda: ec2.create_launch_template(
        LaunchTemplateName="nodesmith/conformance",
        LaunchTemplateData={
            "ImageId": ami, "SecurityGroupIds": [sg],
            "UserData": base64.b64encode(b"#!/bin/bash\necho node\n").decode(),
            "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 1},
            "TagSpecifications": [{"ResourceType": "instance", "Tags": [{"Key": "nodesmith.sh/cluster", "Value": CLUSTER}]}],
        },
        TagSpecifications=[{"ResourceType": "launch-template", "Tags": [{"Key": "nodesmith.sh/cluster", "Value": CLUSTER}]}]),
        lambda r: r["LaunchTemplate"]["LaunchTemplateId"].startswith("lt-") and r["LaunchTemplate"]["LatestVersionNumber"] == 1)
    lt_id = lt["LaunchTemplate"]["LaunchTemplateId"] if lt else None
    error("ec2 CreateLaunchTemplate duplicate name", lambda: ec2.create_launch_template(LaunchTemplateName="nodesmith/conformance", LaunchTemplateData={}),
          "InvalidLaunchTemplateName.AlreadyExistsException")
    call("ec2 DescribeLaunchTemplates by name", lambda: ec2.describe_launch_templates(LaunchTemplateNames=["nodesmith/conformance"]),
         lambda r: [t["LaunchTemplateId"] for t in r["LaunchTemplates"]] == [lt_id] and tags_of(r["LaunchTemplates"][0]) == {"nodesmith.sh/cluster": CLUSTER})
    call("ec2 DescribeLaunchTemplates by id", lambda: ec2.describe_launch_templates(LaunchTemplateIds=[lt_id]), lambda r: len(r["LaunchTemplates"]) == 1)
    call("ec2 DescribeLaunchTemplates name filter", lambda: ec2.describe_launch_templates(Filters=[{"Name": "launch-template-name", "Values": ["nodesmith/*"]}]),
         lambda r: len(r["LaunchTemplates"]) == 1)
    error("ec2 DescribeLaunchTemplates unknown name", lambda: ec2.describe_launch_templates(LaunchTemplateNames=["missing"]),
          "InvalidLaunchTemplateName.NotFoundException")
    error("ec2 DescribeLaunchTemplates malformed id", lambda: ec2.describe_launch_templates(LaunchTemplateIds=["lt-1"]),
          "InvalidLaunchTemplateId.Malformed")

    types = call("ec2 DescribeInstanceTypes paginator over the catalog",
                 lambda: [t for p in ec2.get_paginator("describe_instance_types").paginate() for t in p["InstanceTypes"]],
                 lambda r: len(r) > 100 and len({t["InstanceType"] for t in r}) == len(r))
    call("ec2 DescribeInstanceTypes m5.large", lambda: ec2.describe_instance_types(InstanceTypes=["m5.large"]),
         lambda r: r["InstanceTypes"][0]["VCpuInfo"]["DefaultVCpus"] == 2 and r["InstanceTypes"][0]["MemoryInfo"]["SizeInMiB"] == 8192
         and r["InstanceTypes"][0]["ProcessorInfo"]["SupportedArchitectures"] == ["x86_64"] and r["InstanceTypes"][0]["NetworkInfo"]["MaximumNetworkInterfaces"] > 0)
    if types:
        arm = sorted(t["InstanceType"] for t in types if "arm64" in t["ProcessorInfo"]["SupportedArchitectures"])
        call("ec2 DescribeInstanceTypes architecture filter agrees with the answer",
             lambda: sorted(t["InstanceType"] for p in ec2.get_paginator("describe_instance_types").paginate(
                 Filters=[{"Name": "processor-info.supported-architecture", "Values": ["arm64"]}]) for t in p["InstanceTypes"]),
             lambda r: r == arm and len(r) > 0)
        two = sorted(t["InstanceType"] for t in types if t["VCpuInfo"]["DefaultVCpus"] == 2 and t.get("InstanceStorageSupported"))
        call("ec2 DescribeInstanceTypes vcpu and storage filters agree with the answer",
             lambda: sorted(t["InstanceType"] for p in ec2.get_paginator("describe_instance_types").paginate(
                 Filters=[{"Name": "vcpu-info.default-vcpus", "Values": ["2"]}, {"Name": "instance-storage-supported", "Values": ["true"]}]) for t in p["InstanceTypes"]),
             lambda r: r == two and len(r) > 0)
    error("ec2 DescribeInstanceTypes documented filter the fake does not simulate",
          lambda: ec2.describe_instance_types(Filters=[{"Name": "nitro-tpm-support", "Values": ["supported"]}]), "InvalidParameterValue")
    error("ec2 DescribeInstanceTypes unknown type", lambda: ec2.describe_instance_types(InstanceTypes=["m99.huge"]), "InvalidInstanceType")
    offered = call("ec2 DescribeInstanceTypeOfferings by zone", lambda: ec2.describe_instance_type_offerings(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": ["m5.large"]}]),
        lambda r: len(r["InstanceTypeOfferings"]) > 0 and {o["Location"] for o in r["InstanceTypeOfferings"]} <= {"us-east-1a", "us-east-1b", "us-east-1c"})
    m5_zones = sorted(o["Location"] for o in offered["InstanceTypeOfferings"]) if offered else []
    call("ec2 DescribeInstanceTypeOfferings paginator by zone id", lambda: [o for p in ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone-id") for o in p["InstanceTypeOfferings"]],
         lambda r: len(r) > 100 and all(o["Location"].startswith("use1-az") for o in r))
    call("ec2 DescribeSpotPriceHistory prices the zones that offer the type", lambda: ec2.describe_spot_price_history(InstanceTypes=["m5.large"], ProductDescriptions=["Linux/UNIX"]),
         lambda r: sorted(s["AvailabilityZone"] for s in r["SpotPriceHistory"]) == m5_zones and all(float(s["SpotPrice"]) > 0 and "Timestamp" in s for s in r["SpotPriceHistory"]))
    call("ec2 DescribeSpotPriceHistory paginator", lambda: [s for p in ec2.get_paginator("describe_spot_price_history").paginate(
        PaginationConfig={"PageSize": 100}) for s in p["SpotPriceHistory"]], lambda r: len(r) > 100)

    if not (lt_id and subnet_ids):
        check("ec2 fleet checks need a launch template and subnets", False, "earlier checks failed")
        return
    fleet_in = dict(
        Type="instant", ClientToken="conformance-claim-1",
        TargetCapacitySpecification={"TotalTargetCapacity": 2, "DefaultTargetCapacityType": "spot"},
        SpotOptions={"AllocationStrategy": "price-capacity-optimized"},
        LaunchTemplateConfigs=[{"LaunchTemplateSpecification": {"LaunchTemplateId": lt_id, "Version": "$Latest"},
                                "Overrides": [{"InstanceType": t, "SubnetId": s} for t in ("m5.large", "m6i.large") for s in subnet_ids]}],
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "nodesmith.sh/nodeclaim", "Value": "default-abc"}]}])
    fleet = call("ec2 CreateFleet instant spot", lambda: ec2.create_fleet(**fleet_in),
                 lambda r: sum(len(i["InstanceIds"]) for i in r["Instances"]) == 2 and r["Instances"][0]["Lifecycle"] == "spot"
                 and r["Instances"][0]["LaunchTemplateAndOverrides"]["Overrides"]["SubnetId"] in subnet_ids)
    ids = sorted(i for x in fleet["Instances"] for i in x["InstanceIds"]) if fleet else []
    call("ec2 CreateFleet same token, same parameters: the first answer", lambda: ec2.create_fleet(**fleet_in),
         lambda r: sorted(i for x in r["Instances"] for i in x["InstanceIds"]) == ids and r["FleetId"] == fleet["FleetId"])
    changed = dict(fleet_in, TargetCapacitySpecification={"TotalTargetCapacity": 3, "DefaultTargetCapacityType": "spot"})
    error("ec2 CreateFleet same token, other parameters", lambda: ec2.create_fleet(**changed), "IdempotentParameterMismatch")
    call("ec2 CreateFleet without a token gets one from botocore", lambda: ec2.create_fleet(**{k: v for k, v in dict(
        fleet_in, TargetCapacitySpecification={"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "on-demand"}).items() if k != "ClientToken"}),
         lambda r: len(r["Instances"]) == 1 and r["Instances"][0]["Lifecycle"] == "on-demand")
    call("ec2 CreateFleet override errors", lambda: ec2.create_fleet(
        Type="instant", TargetCapacitySpecification={"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "spot"},
        LaunchTemplateConfigs=[{"LaunchTemplateSpecification": {"LaunchTemplateId": lt_id, "Version": "$Latest"},
                                "Overrides": [{"InstanceType": "m6g.large", "SubnetId": subnet_ids[0]}, {"InstanceType": "m5.large", "SubnetId": "subnet-0123456789abcdef0"}]}]),
         lambda r: not r.get("Instances") and {e["ErrorCode"] for e in r["Errors"]} >= {"InvalidParameterValue", "InvalidSubnetID.NotFound"})

    desc = call("ec2 DescribeInstances by id", lambda: ec2.describe_instances(InstanceIds=ids),
                lambda r: sorted(i["InstanceId"] for res in r["Reservations"] for i in res["Instances"]) == ids)
    inst = desc["Reservations"][0]["Instances"][0] if desc else {}
    call("ec2 DescribeInstances fields", lambda: inst,
         lambda i: i["State"]["Name"] == "running" and i["InstanceLifecycle"] == "spot" and i["SubnetId"] in subnet_ids
         and i["PrivateDnsName"].endswith(".ec2.internal") and i["NetworkInterfaces"][0]["SubnetId"] == i["SubnetId"]
         and i["SecurityGroups"][0]["GroupId"] == sg and tags_of(i)["nodesmith.sh/nodeclaim"] == "default-abc"
         and tags_of(i)["nodesmith.sh/cluster"] == CLUSTER and i["ClientToken"] == "conformance-claim-1" and i["ImageId"] == ami)
    f = lambda name, *values: {"Name": name, "Values": list(values)}
    for name, filters, want in [
        ("instance-state-name", [f("instance-state-name", "pending", "running")], None),
        ("tag:nodesmith.sh/nodeclaim", [f("tag:nodesmith.sh/nodeclaim", "default-abc"), f("instance-id", *ids)], ids),
        ("private-dns-name", [f("private-dns-name", inst.get("PrivateDnsName", "?"))], [inst.get("InstanceId")]),
        ("launch-time", [f("launch-time", inst["LaunchTime"].astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z") if inst else "?"), f("instance-id", *ids)], ids),
        ("network-interface.subnet-id", [f("network-interface.subnet-id", inst.get("SubnetId", "?")), f("instance-id", inst.get("InstanceId", "?"))], [inst.get("InstanceId")]),
        ("instance-lifecycle", [f("instance-lifecycle", "spot"), f("instance-id", *ids)], ids),
        ("tag-key and wildcard value", [f("tag-key", "nodesmith.sh/nodeclaim"), f("tag-value", "default-*"), f("instance-id", *ids)], ids),
    ]:
        call("ec2 DescribeInstances filter " + name, lambda filters=filters: ec2.describe_instances(Filters=filters),
             lambda r, want=want: sorted(i["InstanceId"] for res in r["Reservations"] for i in res["Instances"]) == sorted(want) if want is not None
             else len([i for res in r["Reservations"] for i in res["Instances"]]) >= 2)
    call("ec2 DescribeInstances paginator with MaxResults 5", lambda: [i for p in ec2.get_paginator("describe_instances").paginate(
        PaginationConfig={"PageSize": 5}) for res in p["Reservations"] for i in res["Instances"]], lambda r: len(r) >= 3)

    # The tag that once made DescribeInstances unparseable for every client.
    call("ec2 CreateTags with U+0001 in a value", lambda: ec2.create_tags(Resources=ids[:1], Tags=[{"Key": "note", "Value": "bell\x01ring <&>"}]))
    call("ec2 DescribeInstances parses after a U+0001 tag", lambda: ec2.describe_instances(InstanceIds=ids[:1]),
         lambda r: tags_of(r["Reservations"][0]["Instances"][0])["note"] == "bell\ufffdring <&>")
    call("ec2 CreateTags on a subnet and an instance", lambda: ec2.create_tags(Resources=[ids[0], subnet_ids[0]], Tags=[{"Key": "team", "Value": "a"}, {"Key": "empty", "Value": ""}]))
    call("ec2 DeleteTags by key and value", lambda: ec2.delete_tags(Resources=[ids[0]], Tags=[{"Key": "team", "Value": "b"}, {"Key": "note"}]))
    call("ec2 DeleteTags kept a tag whose value differs", lambda: ec2.describe_instances(InstanceIds=ids[:1]),
         lambda r: "team" in tags_of(r["Reservations"][0]["Instances"][0]) and "note" not in tags_of(r["Reservations"][0]["Instances"][0]))
    call("ec2 DeleteTags with no tags removes every user tag", lambda: ec2.delete_tags(Resources=[subnet_ids[0]]))
    call("ec2 DescribeSubnets after DeleteTags", lambda: ec2.describe_subnets(SubnetIds=subnet_ids[:1]), lambda r: tags_of(r["Subnets"][0]) == {})
    error("ec2 CreateTags aws: prefix", lambda: ec2.create_tags(Resources=ids[:1], Tags=[{"Key": "aws:mine", "Value": "x"}]), "InvalidParameterValue")
    error("ec2 CreateTags unknown id family", lambda: ec2.create_tags(Resources=["vol-0123456789abcdef0"], Tags=[{"Key": "a", "Value": "b"}]), "InvalidID")
    error("ec2 CreateTags more than 50 tags", lambda: ec2.create_tags(Resources=ids[:1], Tags=[{"Key": "k%d" % i, "Value": "v"} for i in range(51)]), "TagLimitExceeded")
    error("ec2 DeleteTags unknown instance", lambda: ec2.delete_tags(Resources=["i-0123456789abcdef0"]), "InvalidInstanceID.NotFound")
    error("ec2 CreateTags DryRun", lambda: ec2.create_tags(Resources=ids[:1], Tags=[{"Key": "a", "Value": "b"}], DryRun=True), "DryRunOperation", status=412)

    for name, fn, code in [
        ("DescribeInstances malformed instance id", lambda: ec2.describe_instances(InstanceIds=["i-nope"]), "InvalidInstanceID.Malformed"),
        ("DescribeInstances unknown instance id", lambda: ec2.describe_instances(InstanceIds=["i-0123456789abcdef0"]), "InvalidInstanceID.NotFound"),
        ("DescribeInstances unknown filter", lambda: ec2.describe_instances(Filters=[f("colour", "red")]), "InvalidParameterValue"),
        ("DescribeInstances documented filter not simulated", lambda: ec2.describe_instances(Filters=[f("ebs-optimized", "true")]), "InvalidParameterValue"),
        ("DescribeInstances ids with MaxResults", lambda: ec2.describe_instances(InstanceIds=ids, MaxResults=5), "InvalidParameterCombination"),
        ("TerminateInstances malformed id", lambda: ec2.terminate_instances(InstanceIds=["i-zz"]), "InvalidInstanceID.Malformed"),
        ("DescribeImages malformed id", lambda: ec2.describe_images(ImageIds=["ami-bad"]), "InvalidAMIID.Malformed"),
        ("DescribeImages unknown id", lambda: ec2.describe_images(ImageIds=["ami-0123456789abcdef0"]), "InvalidAMIID.NotFound"),
        ("DescribeSecurityGroups malformed id", lambda: ec2.describe_security_groups(GroupIds=["sg-bad"]), "InvalidGroupId.Malformed"),
        ("DescribeSecurityGroups unknown id", lambda: ec2.describe_security_groups(GroupIds=["sg-0123456789abcdef0"]), "InvalidGroup.NotFound"),
        ("DescribeSubnets malformed id", lambda: ec2.describe_subnets(SubnetIds=["subnet-bad"]), "InvalidSubnetID.Malformed"),
        ("DescribeSubnets unknown id", lambda: ec2.describe_subnets(SubnetIds=["subnet-0123456789abcdef0"]), "InvalidSubnetID.NotFound"),
        ("CreateLaunchTemplate malformed image", lambda: ec2.create_launch_template(LaunchTemplateName="bad", LaunchTemplateData={"ImageId": "ami-x"}), "InvalidAMIID.Malformed"),
    ]:
        error("ec2 " + name, fn, code)
    error("ec2 a body over the limit is refused whole", lambda: ec2.describe_instances(Filters=[f("tag:big", "x" * (9 << 20))]), "RequestEntityTooLarge", status=413)

    reservation_suite(ec2, ec2_loose, ami, sg)

    call("ec2 TerminateInstances", lambda: ec2.terminate_instances(InstanceIds=ids),
         lambda r: sorted(c["InstanceId"] for c in r["TerminatingInstances"]) == ids and all(c["PreviousState"]["Name"] == "running" for c in r["TerminatingInstances"]))
    call("ec2 DescribeInstances terminated", lambda: ec2.describe_instances(InstanceIds=ids),
         lambda r: all(i["State"]["Name"] == "terminated" and "SubnetId" not in i and i["StateReason"]["Code"] == "Client.UserInitiatedShutdown"
                       for res in r["Reservations"] for i in res["Instances"]))
    call("ec2 DeleteLaunchTemplate", lambda: ec2.delete_launch_template(LaunchTemplateId=lt_id), lambda r: r["LaunchTemplate"]["LaunchTemplateId"] == lt_id)


ODCR = "cr-0c0ffee0000000001"   # m6i.large, us-east-1a, 2 instances, targeted, interruptible, tag team=ml
BLOCK = "cr-0c0ffee0000000002"  # c5.large, us-east-1b, 1 instance, a Capacity Block


def reservation_suite(ec2, ec2_loose, ami, sg):
    """Capacity reservations: DescribeCapacityReservations and its filters,
    launches that target a reservation, the count going down and back, and
    the error codes, as conformance_test.go's --capacity-reservation flags
    set them up."""
    f = lambda name, *values: {"Name": name, "Values": list(values)}
    ids_of = lambda r: sorted(c["CapacityReservationId"] for c in r["CapacityReservations"])
    odcr = call("ec2 DescribeCapacityReservations", lambda: ec2.describe_capacity_reservations(),
                lambda r: ids_of(r) == [ODCR, BLOCK])
    cr = {c["CapacityReservationId"]: c for c in odcr["CapacityReservations"]} if odcr else {}
    call("ec2 DescribeCapacityReservations fields", lambda: cr[ODCR],
         lambda c: c["InstanceType"] == "m6i.large" and c["AvailabilityZone"] == "us-east-1a" and c["TotalInstanceCount"] == 2
         and c["AvailableInstanceCount"] == 2 and c["State"] == "active" and c["InstanceMatchCriteria"] == "targeted"
         and c["ReservationType"] == "default" and c["EndDateType"] == "unlimited" and "EndDate" not in c and tags_of(c) == {"team": "ml"}
         and c["CapacityReservationArn"].endswith(":capacity-reservation/" + ODCR) and c["AvailabilityZoneId"].startswith("use1-az")
         and c["Interruptible"] is True)
    call("ec2 DescribeCapacityReservations a Capacity Block", lambda: cr[BLOCK],
         lambda c: c["ReservationType"] == "capacity-block" and c["EndDateType"] == "limited" and c["EndDate"].year == 2099
         and c["InstanceMatchCriteria"] == "targeted" and c["Interruptible"] is False)
    for name, filters, want in [
        ("tag:team", [f("tag:team", "ml")], [ODCR]),
        ("instance-type", [f("instance-type", "c5.large")], [BLOCK]),
        ("state", [f("state", "active")], [ODCR, BLOCK]),
        ("owner-id", [f("owner-id", "000000000000")], []),
        ("availability-zone", [f("availability-zone", "us-east-1a")], [ODCR]),
        ("end-date-type", [f("end-date-type", "limited")], [BLOCK]),
    ]:
        call("ec2 DescribeCapacityReservations filter " + name, lambda filters=filters: ec2.describe_capacity_reservations(Filters=filters),
             lambda r, want=want: ids_of(r) == want)
    error("ec2 DescribeCapacityReservations malformed id", lambda: ec2.describe_capacity_reservations(CapacityReservationIds=["cr-bad"]), "InvalidCapacityReservationId.Malformed")
    error("ec2 DescribeCapacityReservations unknown id", lambda: ec2.describe_capacity_reservations(CapacityReservationIds=["cr-0123456789abcdef0"]), "InvalidCapacityReservationId.NotFound")
    error("ec2 DescribeCapacityReservations unknown filter", lambda: ec2.describe_capacity_reservations(Filters=[f("colour", "red")]), "InvalidParameterValue")

    def template(name, target, block=False):
        data = {"ImageId": ami, "SecurityGroupIds": [sg],
                "CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationId": target}}}
        if block:
            data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
        r = call("ec2 CreateLaunchTemplate targeting " + target, lambda: ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData=data))
        return r["LaunchTemplate"]["LaunchTemplateId"] if r else None

    subnets = {s["AvailabilityZone"]: s["SubnetId"] for s in ec2.describe_subnets(Filters=[f("tag:" + DISCOVERY, CLUSTER)])["Subnets"]}
    lt = template("conformance-odcr", ODCR)
    blt = template("conformance-block", BLOCK, block=True)
    if not (lt and blt):
        return

    def fleet(lt_id, itype, zone, n, ct="on-demand"):
        return lambda: ec2.create_fleet(Type="instant", TargetCapacitySpecification={"TotalTargetCapacity": n, "DefaultTargetCapacityType": ct},
                                        LaunchTemplateConfigs=[{"LaunchTemplateSpecification": {"LaunchTemplateId": lt_id, "Version": "$Latest"},
                                                                "Overrides": [{"InstanceType": itype, "SubnetId": subnets[zone]}]}])
    launched = lambda r: [i for x in r.get("Instances", []) for i in x["InstanceIds"]]
    codes = lambda r: [e["ErrorCode"] for e in r.get("Errors", [])]
    first = call("ec2 CreateFleet into a targeted reservation", fleet(lt, "m6i.large", "us-east-1a", 1),
                 lambda r: len(launched(r)) == 1 and r["Instances"][0]["Lifecycle"] == "on-demand")
    call("ec2 DescribeCapacityReservations counts the launch", lambda: ec2.describe_capacity_reservations(CapacityReservationIds=[ODCR]),
         lambda r: r["CapacityReservations"][0]["AvailableInstanceCount"] == 1)
    call("ec2 CreateFleet past the reservation: ReservationCapacityExceeded", fleet(lt, "m6i.large", "us-east-1a", 2),
         lambda r: len(launched(r)) == 1 and codes(r) == ["ReservationCapacityExceeded"])
    call("ec2 CreateFleet into a full reservation launches nothing", fleet(lt, "m6i.large", "us-east-1a", 1),
         lambda r: not launched(r) and codes(r) == ["ReservationCapacityExceeded"])
    call("ec2 CreateFleet of another type than the reservation's", fleet(lt, "c5.large", "us-east-1a", 1),
         lambda r: not launched(r) and codes(r) == ["InvalidParameterCombination"])
    ids = launched(first) if first else []
    call("ec2 DescribeInstances capacityReservationId", lambda: ec2.describe_instances(Filters=[f("capacity-reservation-id", ODCR)]),
         lambda r: len([i for x in r["Reservations"] for i in x["Instances"]]) == 2
         and all(i["CapacityReservationId"] == ODCR and "InstanceLifecycle" not in i for x in r["Reservations"] for i in x["Instances"]))
    call("ec2 TerminateInstances in a reservation", lambda: ec2.terminate_instances(InstanceIds=ids))
    call("ec2 DescribeCapacityReservations gives the instance back", lambda: ec2.describe_capacity_reservations(CapacityReservationIds=[ODCR]),
         lambda r: r["CapacityReservations"][0]["AvailableInstanceCount"] == 1)
    call("ec2 CreateFleet capacity-block without a block target", fleet(lt, "m6i.large", "us-east-1a", 1, "capacity-block"),
         lambda r: not launched(r) and codes(r) == ["InvalidParameterCombination"])
    blk = call("ec2 CreateFleet capacity-block", fleet(blt, "c5.large", "us-east-1b", 1, "capacity-block"),
               lambda r: len(launched(r)) == 1)
    if blk:
        call("ec2 DescribeInstances capacity-block lifecycle", lambda: ec2.describe_instances(InstanceIds=launched(blk)),
             lambda r: r["Reservations"][0]["Instances"][0]["InstanceLifecycle"] == "capacity-block"
             and r["Reservations"][0]["Instances"][0]["CapacityReservationId"] == BLOCK)


def iam_suite(iam, iam_loose):
    role = call("iam GetRole", lambda: iam.get_role(RoleName=NODE_ROLE),
                lambda r: r["Role"]["RoleName"] == NODE_ROLE and r["Role"]["Arn"] == "arn:aws:iam::123456789012:role/" + NODE_ROLE
                and r["Role"]["RoleId"].startswith("AROA") and r["Role"]["MaxSessionDuration"] == 3600
                # botocore URL-decodes and JSON-parses policy documents itself
                and r["Role"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]["Service"] == "ec2.amazonaws.com")
    error("iam GetRole unknown", lambda: iam.get_role(RoleName="missing"), "NoSuchEntity", exception="NoSuchEntityException", status=404)
    call("iam CreateInstanceProfile", lambda: iam.create_instance_profile(
        InstanceProfileName="conformance_profile", Path="/nodesmith/", Tags=[{"Key": "nodesmith.sh/cluster", "Value": CLUSTER}]),
         lambda r: r["InstanceProfile"]["Arn"] == "arn:aws:iam::123456789012:instance-profile/nodesmith/conformance_profile"
         and r["InstanceProfile"]["Roles"] == [] and r["InstanceProfile"]["InstanceProfileId"].startswith("AIPA"))
    error("iam CreateInstanceProfile duplicate", lambda: iam.create_instance_profile(InstanceProfileName="conformance_profile"),
          "EntityAlreadyExists", exception="EntityAlreadyExistsException", status=409)
    call("iam AddRoleToInstanceProfile", lambda: iam.add_role_to_instance_profile(InstanceProfileName="conformance_profile", RoleName=NODE_ROLE))
    error("iam AddRoleToInstanceProfile a second role", lambda: iam.add_role_to_instance_profile(InstanceProfileName="conformance_profile", RoleName=NODE_ROLE),
          "LimitExceeded", exception="LimitExceededException")
    error("iam AddRoleToInstanceProfile unknown role", lambda: iam.add_role_to_instance_profile(InstanceProfileName="conformance_profile", RoleName="nope"),
          "NoSuchEntity")
    call("iam TagInstanceProfile", lambda: iam.tag_instance_profile(InstanceProfileName="conformance_profile", Tags=[{"Key": "team", "Value": "a"}]))
    call("iam GetInstanceProfile", lambda: iam.get_instance_profile(InstanceProfileName="conformance_profile"),
         lambda r: [x["RoleName"] for x in r["InstanceProfile"]["Roles"]] == [NODE_ROLE]
         and isinstance(r["InstanceProfile"]["Roles"][0]["AssumeRolePolicyDocument"], dict)
         and {t["Key"] for t in r["InstanceProfile"]["Tags"]} == {"nodesmith.sh/cluster", "team"})
    for n in ("conformance_b", "conformance_c"):
        iam.create_instance_profile(InstanceProfileName=n, Path="/nodesmith/")
    call("iam ListInstanceProfiles paginator with a path prefix", lambda: [p["InstanceProfileName"] for page in iam.get_paginator("list_instance_profiles").paginate(
        PathPrefix="/nodesmith/", PaginationConfig={"PageSize": 1}) for p in page["InstanceProfiles"]],
         lambda r: r == ["conformance_b", "conformance_c", "conformance_profile"])
    call("iam ListInstanceProfiles one page", lambda: iam.list_instance_profiles(MaxItems=2),
         lambda r: len(r["InstanceProfiles"]) == 2 and r["IsTruncated"] and r["Marker"])
    iam.add_role_to_instance_profile(InstanceProfileName="conformance_b", RoleName=NODE_ROLE)
    call("iam ListInstanceProfilesForRole paginator", lambda: [p["InstanceProfileName"] for page in iam.get_paginator("list_instance_profiles_for_role").paginate(
        RoleName=NODE_ROLE, PaginationConfig={"PageSize": 1}) for p in page["InstanceProfiles"]],
         lambda r: r == ["conformance_b", "conformance_profile"])
    call("iam ListInstanceProfilesForRole one page", lambda: iam.list_instance_profiles_for_role(RoleName=NODE_ROLE, MaxItems=1),
         lambda r: [p["InstanceProfileName"] for p in r["InstanceProfiles"]] == ["conformance_b"] and r["IsTruncated"] and r["Marker"]
         and [x["RoleName"] for x in r["InstanceProfiles"][0]["Roles"]] == [NODE_ROLE])
    error("iam ListInstanceProfilesForRole unknown role", lambda: iam.list_instance_profiles_for_role(RoleName="missing"),
          "NoSuchEntity", exception="NoSuchEntityException", status=404)
    iam.remove_role_from_instance_profile(InstanceProfileName="conformance_b", RoleName=NODE_ROLE)
    error("iam DeleteInstanceProfile with a role", lambda: iam.delete_instance_profile(InstanceProfileName="conformance_profile"),
          "DeleteConflict", exception="DeleteConflictException", status=409)
    call("iam RemoveRoleFromInstanceProfile", lambda: iam.remove_role_from_instance_profile(InstanceProfileName="conformance_profile", RoleName=NODE_ROLE))
    call("iam DeleteInstanceProfile", lambda: iam.delete_instance_profile(InstanceProfileName="conformance_profile"))
    error("iam GetInstanceProfile deleted", lambda: iam.get_instance_profile(InstanceProfileName="conformance_profile"), "NoSuchEntity", status=404)
    for name, fn in [
        ("profile name with a space", lambda: iam.create_instance_profile(InstanceProfileName="has space")),
        ("profile name of 129 characters", lambda: iam.create_instance_profile(InstanceProfileName="p" * 129)),
        ("path without slashes", lambda: iam.create_instance_profile(InstanceProfileName="p", Path="nodesmith")),
        ("role name of 65 characters", lambda: iam.get_role(RoleName="r" * 65)),
        ("tag key with a comma", lambda: iam.tag_instance_profile(InstanceProfileName="conformance_b", Tags=[{"Key": "a,b", "Value": "v"}])),
        ("MaxItems over 1000", lambda: iam_loose.list_instance_profiles(MaxItems=1001)),
        ("path prefix without a slash", lambda: iam.list_instance_profiles(PathPrefix="nodesmith")),
    ]:
        error("iam validation: " + name, fn, "ValidationError", status=400)
    error("iam unknown action", lambda: iam.list_roles(), "InvalidAction")


def sqs_suite(sqs, sqs_loose):
    url = call("sqs CreateQueue", lambda: sqs.create_queue(QueueName="conformance", Attributes={"VisibilityTimeout": "60"}),
               lambda r: r["QueueUrl"].endswith("/123456789012/conformance"))
    url = url["QueueUrl"] if url else ENDPOINT + "/123456789012/conformance"
    call("sqs CreateQueue again with the same attributes", lambda: sqs.create_queue(QueueName="conformance", Attributes={"VisibilityTimeout": "60"}),
         lambda r: r["QueueUrl"] == url)
    error("sqs CreateQueue with different attributes", lambda: sqs.create_queue(QueueName="conformance", Attributes={"VisibilityTimeout": "61"}),
          "QueueAlreadyExists", exception="QueueNameExists")
    call("sqs GetQueueUrl", lambda: sqs.get_queue_url(QueueName="conformance"), lambda r: r["QueueUrl"] == url)
    error("sqs GetQueueUrl unknown", lambda: sqs.get_queue_url(QueueName="nope"), "AWS.SimpleQueueService.NonExistentQueue", exception="QueueDoesNotExist")
    for name, qname, code in [
        ("81 characters", "q" * 81, "InvalidParameterValue"),
        ("a space", "has space", "InvalidParameterValue"),
        ("a dot", "a.b", "InvalidParameterValue"),
    ]:
        error("sqs CreateQueue name with " + name, lambda qname=qname: sqs.create_queue(QueueName=qname), code)
    for attr, value, code in [
        ("VisibilityTimeout", "43201", "InvalidAttributeValue"),
        ("DelaySeconds", "901", "InvalidAttributeValue"),
        ("MessageRetentionPeriod", "59", "InvalidAttributeValue"),
        ("MaximumMessageSize", "1048577", "InvalidAttributeValue"),
        ("Colour", "blue", "InvalidAttributeName"),
    ]:
        error("sqs SetQueueAttributes %s=%s" % (attr, value), lambda attr=attr, value=value: sqs.set_queue_attributes(QueueUrl=url, Attributes={attr: value}),
              code, exception=code)
    call("sqs SetQueueAttributes", lambda: sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "43200", "MessageRetentionPeriod": "3600"}))
    call("sqs GetQueueAttributes All", lambda: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]),
         lambda r: r["Attributes"]["VisibilityTimeout"] == "43200" and r["Attributes"]["MaximumMessageSize"] == "1048576"
         and r["Attributes"]["QueueArn"] == "arn:aws:sqs:us-east-1:123456789012:conformance" and "CreatedTimestamp" in r["Attributes"])
    call("sqs GetQueueAttributes without names answers none", lambda: sqs.get_queue_attributes(QueueUrl=url), lambda r: "Attributes" not in r)
    error("sqs GetQueueAttributes unknown name", lambda: sqs_loose.get_queue_attributes(QueueUrl=url, AttributeNames=["Colour"]), "InvalidAttributeName")

    attrs = {"kind": {"DataType": "String", "StringValue": "greeting ✓"}, "n": {"DataType": "Number", "StringValue": "-12.5"},
             "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"}, "j": {"DataType": "String.json", "StringValue": "{}"}}
    body = "hello ✓ <xml/> \t\n"
    call("sqs SendMessage with attributes: MD5s as the developer guide computes them", lambda: sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attrs),
         lambda r: r["MD5OfMessageBody"] == hashlib.md5(body.encode()).hexdigest() and r["MD5OfMessageAttributes"] == sqs_attributes_md5(attrs))
    call("sqs SendMessageBatch", lambda: sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "m%d" % i, "MessageBody": "m%d" % i} for i in range(9)] + [{"Id": "bad", "MessageBody": "\x01"}]),
         lambda r: len(r["Successful"]) == 9 and [(f["Id"], f["Code"], f["SenderFault"]) for f in r["Failed"]] == [("bad", "InvalidMessageContents", True)])
    recv = call("sqs ReceiveMessage", lambda: sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"], VisibilityTimeout=120),
                lambda r: len(r["Messages"]) == 10 and r["Messages"][0]["Body"] == body and r["Messages"][0]["Attributes"]["ApproximateReceiveCount"] == "1"
                and r["Messages"][0]["MD5OfMessageAttributes"] == sqs_attributes_md5(attrs) and r["Messages"][0]["MessageAttributes"]["blob"]["BinaryValue"] == b"\x00\x01\xff")
    msgs = recv["Messages"] if recv else []
    call("sqs ReceiveMessage on an empty queue leaves Messages out", lambda: sqs.receive_message(QueueUrl=url), lambda r: "Messages" not in r)
    if msgs:
        call("sqs DeleteMessage", lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle=msgs[0]["ReceiptHandle"]))
        call("sqs DeleteMessage with a stale handle succeeds", lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle=msgs[0]["ReceiptHandle"]))
        call("sqs DeleteMessageBatch", lambda: sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": "a", "ReceiptHandle": msgs[1]["ReceiptHandle"]}, {"Id": "b", "ReceiptHandle": "bogus"}]),
             lambda r: [s["Id"] for s in r["Successful"]] == ["a"] and [(f["Id"], f["Code"]) for f in r["Failed"]] == [("b", "ReceiptHandleIsInvalid")])
        call("sqs ChangeMessageVisibility", lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=msgs[2]["ReceiptHandle"], VisibilityTimeout=0))
        call("sqs ChangeMessageVisibilityBatch", lambda: sqs.change_message_visibility_batch(QueueUrl=url, Entries=[
            {"Id": "a", "ReceiptHandle": msgs[3]["ReceiptHandle"], "VisibilityTimeout": 0}, {"Id": "b", "ReceiptHandle": "bogus", "VisibilityTimeout": 0}]),
             lambda r: [s["Id"] for s in r["Successful"]] == ["a"] and [(f["Id"], f["Code"]) for f in r["Failed"]] == [("b", "ReceiptHandleIsInvalid")])
        error("sqs ChangeMessageVisibility over 12 hours", lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=msgs[4]["ReceiptHandle"], VisibilityTimeout=43201),
              "InvalidParameterValue")
        error("sqs ChangeMessageVisibility of a deleted message", lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=msgs[0]["ReceiptHandle"], VisibilityTimeout=5),
              "AWS.SimpleQueueService.MessageNotInflight", exception="MessageNotInflight")
    error("sqs DeleteMessage with a bad handle", lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle="bogus"), "ReceiptHandleIsInvalid", exception="ReceiptHandleIsInvalid")
    error("sqs ChangeMessageVisibility with a bad handle", lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle="bogus", VisibilityTimeout=5),
          "ReceiptHandleIsInvalid", exception="ReceiptHandleIsInvalid")
    call("sqs counts: 2 visible again, 6 in flight", lambda: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]),
         lambda r: (r["Attributes"]["ApproximateNumberOfMessages"], r["Attributes"]["ApproximateNumberOfMessagesNotVisible"], r["Attributes"]["ApproximateNumberOfMessagesDelayed"]) == ("2", "6", "0"))
    call("sqs SendMessage with a delay", lambda: sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=600))
    call("sqs a delayed message counts as Delayed, not NotVisible", lambda: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]),
         lambda r: (r["Attributes"]["ApproximateNumberOfMessagesNotVisible"], r["Attributes"]["ApproximateNumberOfMessagesDelayed"]) == ("6", "1"))

    one_mib = "b" * (1 << 20)
    for name, kwargs, code in [
        ("a body of 1 MiB and a byte", {"MessageBody": one_mib + "b"}, "InvalidParameterValue"),
        ("U+0001 in the body", {"MessageBody": "a\x01b"}, "InvalidMessageContents"),
        ("eleven attributes", {"MessageBody": "x", "MessageAttributes": {"a%d" % i: {"DataType": "String", "StringValue": "v"} for i in range(11)}}, "InvalidParameterValue"),
        ("an AWS. attribute name", {"MessageBody": "x", "MessageAttributes": {"AWS.trace": {"DataType": "String", "StringValue": "v"}}}, "InvalidParameterValue"),
        ("an unknown data type", {"MessageBody": "x", "MessageAttributes": {"a": {"DataType": "Text", "StringValue": "v"}}}, "InvalidParameterValue"),
        ("a Number that is not one", {"MessageBody": "x", "MessageAttributes": {"a": {"DataType": "Number", "StringValue": "twelve"}}}, "InvalidParameterValue"),
        ("DelaySeconds over 15 minutes", {"MessageBody": "x", "DelaySeconds": 901}, "InvalidParameterValue"),
    ]:
        error("sqs SendMessage " + name, lambda kwargs=kwargs: sqs.send_message(QueueUrl=url, **kwargs), code)
    call("sqs SendMessage of exactly 1 MiB", lambda: sqs.send_message(QueueUrl=url, MessageBody=one_mib), lambda r: "MessageId" in r)
    error("sqs SendMessageBatch over 1 MiB in total", lambda: sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "b" * (600 << 10)}, {"Id": "b", "MessageBody": "b" * (600 << 10)}]),
          "AWS.SimpleQueueService.BatchRequestTooLong", exception="BatchRequestTooLong")
    error("sqs SendMessageBatch eleven entries", lambda: sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "x"} for i in range(11)]),
          "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", exception="TooManyEntriesInBatchRequest")
    error("sqs SendMessageBatch repeated ids", lambda: sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "x"}, {"Id": "a", "MessageBody": "y"}]),
          "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", exception="BatchEntryIdsNotDistinct")
    error("sqs SendMessageBatch bad entry id", lambda: sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "a b", "MessageBody": "x"}]),
          "AWS.SimpleQueueService.InvalidBatchEntryId", exception="InvalidBatchEntryId")
    error("sqs ReceiveMessage MaxNumberOfMessages 11", lambda: sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=11), "InvalidParameterValue")
    error("sqs ReceiveMessage VisibilityTimeout over 12 hours", lambda: sqs.receive_message(QueueUrl=url, VisibilityTimeout=43201), "InvalidParameterValue")

    call("sqs PurgeQueue", lambda: sqs.purge_queue(QueueUrl=url))
    error("sqs PurgeQueue twice within 60 seconds", lambda: sqs.purge_queue(QueueUrl=url), "AWS.SimpleQueueService.PurgeQueueInProgress", exception="PurgeQueueInProgress")
    call("sqs PurgeQueue emptied the queue", lambda: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]),
         lambda r: set(r["Attributes"].values()) == {"0"})

    for n in ("conformance-a", "conformance-b"):
        sqs.create_queue(QueueName=n)
    call("sqs ListQueues paginator with a prefix", lambda: [u.rsplit("/", 1)[1] for p in sqs.get_paginator("list_queues").paginate(
        QueueNamePrefix="conformance", PaginationConfig={"PageSize": 1}) for u in p.get("QueueUrls", [])],
         lambda r: r == ["conformance", "conformance-a", "conformance-b"])
    call("sqs ListQueues with no match leaves QueueUrls out", lambda: sqs.list_queues(QueueNamePrefix="zzz"), lambda r: "QueueUrls" not in r)
    call("sqs DeleteQueue", lambda: sqs.delete_queue(QueueUrl=url))
    error("sqs SendMessage to a deleted queue", lambda: sqs.send_message(QueueUrl=url, MessageBody="x"), "AWS.SimpleQueueService.NonExistentQueue", exception="QueueDoesNotExist")
    error("sqs CreateQueue within 60 seconds of DeleteQueue", lambda: sqs.create_queue(QueueName="conformance"),
          "AWS.SimpleQueueService.QueueDeletedRecently", exception="QueueDeletedRecently")
    error("sqs unsimulated operation", lambda: sqs.tag_queue(QueueUrl=ENDPOINT + "/123456789012/conformance-a", Tags={"a": "b"}),
          "AWS.SimpleQueueService.UnsupportedOperation")
    error("sqs FIFO queues are refused, not simulated", lambda: sqs.create_queue(QueueName="jobs.fifo", Attributes={"FifoQueue": "true"}),
          "AWS.SimpleQueueService.UnsupportedOperation")


def sqs_system_attributes_suite(sqs):
    """MessageSystemAttributes (AWSTraceHeader) and the MD5 SQS answers for them."""
    url = sqs.create_queue(QueueName="conformance-trace")["QueueUrl"]
    trace = {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"}}
    call("sqs SendMessage with MessageSystemAttributes: MD5OfMessageSystemAttributes as the developer guide computes it",
         lambda: sqs.send_message(QueueUrl=url, MessageBody="traced", MessageSystemAttributes=trace),
         lambda r: r["MD5OfMessageSystemAttributes"] == sqs_attributes_md5(trace) and "MD5OfMessageAttributes" not in r)
    call("sqs SendMessageBatch with MessageSystemAttributes",
         lambda: sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "t", "MessageBody": "traced", "MessageSystemAttributes": trace}]),
         lambda r: [x["MD5OfMessageSystemAttributes"] for x in r["Successful"]] == [sqs_attributes_md5(trace)])
    call("sqs SendMessage without MessageSystemAttributes leaves the MD5 out",
         lambda: sqs.send_message(QueueUrl=url, MessageBody="plain"), lambda r: "MD5OfMessageSystemAttributes" not in r)
    error("sqs SendMessage with an unknown system attribute", lambda: sqs.send_message(
        QueueUrl=url, MessageBody="x", MessageSystemAttributes={"Colour": {"DataType": "String", "StringValue": "red"}}), "InvalidParameterValue")
    sqs.delete_queue(QueueUrl=url)


def ssm_suite(ssm, ssm_loose):
    error("ssm GetParameter unknown", lambda: ssm.get_parameter(Name="/aws/service/eks/optimized-ami/1.99/amazon-linux-2023/x86_64/standard/recommended/image_id"),
          "ParameterNotFound", exception="ParameterNotFound")
    error("ssm GetParameters eleven names", lambda: ssm.get_parameters(Names=[AL2023_X86] * 11), "ValidationException")
    error("ssm GetParameter empty name", lambda: ssm_loose.get_parameter(Name=""), "ValidationException")
    error("ssm unsimulated operation", lambda: ssm.get_parameters_by_path(Path="/aws"), "UnknownOperationException")


def query_get(client, service, action, params):
    """A SigV4-signed GET of a Query API action (EC2 and IAM take the
    parameters in the URL as well as in a POST body; botocore itself always
    POSTs), its answer parsed by botocore's own parser for the operation."""
    import urllib.error
    import urllib.parse
    import urllib.request
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    from botocore.parsers import create_parser

    model = client.meta.service_model
    query = dict(params, Action=action, Version=model.api_version)
    req = AWSRequest(method="GET", url=ENDPOINT.rstrip("/") + "/?" + urllib.parse.urlencode(sorted(query.items())))
    SigV4Auth(Credentials("fake", "fake"), service, REGION).add_auth(req)
    prepared = req.prepare()
    try:
        with urllib.request.urlopen(urllib.request.Request(prepared.url, headers=dict(prepared.headers), method="GET")) as resp:
            status, headers, body = resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        status, headers, body = e.code, dict(e.headers), e.read()
    op = model.operation_model(action)
    parsed = create_parser(model.protocol).parse({"body": body, "headers": headers, "status_code": status}, op.output_shape)
    return status, parsed


def query_get_suite(ec2):
    call("ec2 DescribeInstanceTypes by GET (Query API parameters in the URL)",
         lambda: query_get(ec2, "ec2", "DescribeInstanceTypes", {"InstanceType.1": "m5.large"}),
         lambda r: r[0] == 200 and [t["InstanceType"] for t in r[1]["InstanceTypes"]] == ["m5.large"])
    call("ec2 DescribeInstanceTypes by GET: an unknown type is the same error as by POST",
         lambda: query_get(ec2, "ec2", "DescribeInstanceTypes", {"InstanceType.1": "m9.nothing"}),
         lambda r: r[0] == 400 and r[1].get("Error", {}).get("Code") == "InvalidInstanceType")


def main():
    (ec2, ec2_loose), (iam, iam_loose), (sqs, sqs_loose), (ssm, ssm_loose) = session_clients()
    for name, suite in [("ec2", lambda: ec2_suite(ec2, ec2_loose, ssm)), ("ec2 by GET", lambda: query_get_suite(ec2)),
                        ("iam", lambda: iam_suite(iam, iam_loose)),
                        ("sqs", lambda: sqs_suite(sqs, sqs_loose)), ("sqs system attributes", lambda: sqs_system_attributes_suite(sqs)), ("ssm", lambda: ssm_suite(ssm, ssm_loose))]:
        try:
            suite()
        except Exception:
            check(name + " suite ran to the end", False, traceback.format_exc())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
