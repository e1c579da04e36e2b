package fakeaws

// DefaultSpecs is a small, realistic instance-type list (us-east-1 on-demand
// prices, spot at roughly the advisor's discount) used when Options.Specs is
// empty. Worlds that need the whole catalog pass it in Options.Specs.
func DefaultSpecs() []Spec {
	x := func(name string, vcpu int, memGiB int64, enis, ips int, od, spot float64, net string) Spec {
		return Spec{Name: name, Arch: "x86_64", VCPU: vcpu, MemoryMiB: memGiB * 1024, MaxENIs: enis, IPv4PerENI: ips,
			OnDemandPrice: od, SpotPrice: spot, NetworkPerformance: net, Hypervisor: "nitro"}
	}
	a := func(s Spec) Spec { s.Arch = "arm64"; return s }
	specs := []Spec{
		x("t3.medium", 2, 4, 3, 6, 0.0416, 0.0125, "Up to 5 Gigabit"),
		x("m5.large", 2, 8, 3, 10, 0.096, 0.035, "Up to 10 Gigabit"),
		x("m5.xlarge", 4, 16, 4, 15, 0.192, 0.07, "Up to 10 Gigabit"),
		x("m5.2xlarge", 8, 32, 4, 15, 0.384, 0.14, "Up to 10 Gigabit"),
		x("m6i.large", 2, 8, 3, 10, 0.096, 0.038, "Up to 12.5 Gigabit"),
		x("m6i.xlarge", 4, 16, 4, 15, 0.192, 0.076, "Up to 12.5 Gigabit"),
		x("c5.large", 2, 4, 3, 10, 0.085, 0.032, "Up to 10 Gigabit"),
		x("c5.xlarge", 4, 8, 4, 15, 0.17, 0.064, "Up to 10 Gigabit"),
		x("r5.large", 2, 16, 3, 10, 0.126, 0.045, "Up to 10 Gigabit"),
		x("r5.xlarge", 4, 32, 4, 15, 0.252, 0.09, "Up to 10 Gigabit"),
		a(x("m6g.large", 2, 8, 3, 10, 0.077, 0.03, "Up to 10 Gigabit")),
		a(x("m6g.xlarge", 4, 16, 4, 15, 0.154, 0.06, "Up to 10 Gigabit")),
		a(x("c6g.large", 2, 4, 3, 10, 0.068, 0.027, "Up to 10 Gigabit")),
		a(x("c7g.xlarge", 4, 8, 4, 15, 0.145, 0.058, "Up to 12.5 Gigabit")),
	}
	g := x("g4dn.xlarge", 4, 16, 3, 10, 0.526, 0.21, "Up to 25 Gigabit")
	g.GPUCount, g.GPUName, g.GPUMfr, g.GPUMemMiB, g.LocalNVMeGB = 1, "T4", "NVIDIA", 16384, 125
	return append(specs, g)
}
