package keda

import (
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lab := Config{QueueLength: 10, MinReplicas: 0, MaxReplicas: 20, PollingInterval: 15 * time.Second, CooldownPeriod: 120 * time.Second, ScaleOnInFlight: true}
	noInFlight := lab
	noInFlight.ScaleOnInFlight = false
	activation := lab
	activation.ActivationQueueLength = 5
	minTwo := lab
	minTwo.MinReplicas = 2
	delayed := lab
	delayed.ScaleOnDelayed = true

	tests := []struct {
		name   string
		cfg    Config
		m      Metrics
		state  State
		now    time.Time
		want   int32
		active bool
	}{
		{name: "1000 messages cap at max", cfg: lab, m: Metrics{Visible: 1000}, now: t0, want: 20, active: true},
		{name: "30 messages give 3 replicas", cfg: lab, m: Metrics{Visible: 30}, now: t0, want: 3, active: true},
		{name: "ceil rounds up", cfg: lab, m: Metrics{Visible: 21}, now: t0, want: 3, active: true},
		{name: "in-flight counts by default", cfg: lab, m: Metrics{Visible: 5, InFlight: 20}, now: t0, want: 3, active: true},
		{name: "in-flight ignored when disabled", cfg: noInFlight, m: Metrics{Visible: 5, InFlight: 20}, now: t0, want: 1, active: true},
		{name: "delayed ignored by default", cfg: lab, m: Metrics{Visible: 10, Delayed: 50}, now: t0, want: 1, active: true},
		{name: "delayed counts when enabled", cfg: delayed, m: Metrics{Visible: 10, Delayed: 50}, now: t0, want: 6, active: true},
		{name: "one message wakes from zero", cfg: lab, m: Metrics{Visible: 1}, now: t0, want: 1, active: true},
		{name: "activation is strict", cfg: activation, m: Metrics{Visible: 5}, now: t0, want: 0},
		{name: "above activation scales", cfg: activation, m: Metrics{Visible: 6}, now: t0, want: 1, active: true},
		{name: "empty queue within cooldown holds hpa minimum", cfg: lab, state: State{Replicas: 20, LastActive: t0}, now: t0.Add(119 * time.Second), want: 1},
		{name: "empty queue after cooldown goes to min", cfg: lab, state: State{Replicas: 1, LastActive: t0}, now: t0.Add(120 * time.Second), want: 0},
		{name: "min replicas floor after cooldown", cfg: minTwo, state: State{Replicas: 7, LastActive: t0}, now: t0.Add(10 * time.Minute), want: 2},
		{name: "min replicas floor while active", cfg: minTwo, m: Metrics{Visible: 3}, now: t0, want: 2, active: true},
		{name: "idle at zero stays zero", cfg: lab, now: t0, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cfg.Poll(tt.m, tt.state, tt.now)
			if got.Replicas != tt.want {
				t.Errorf("replicas = %d, want %d", got.Replicas, tt.want)
			}
			if tt.active != got.LastActive.Equal(tt.now) {
				t.Errorf("last active = %s, want active=%v at %s", got.LastActive, tt.active, tt.now)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := Config{QueueLength: 10, MaxReplicas: 20, PollingInterval: time.Second}
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr bool
	}{
		{name: "valid", mutate: func(*Config) {}},
		{name: "zero queue length", mutate: func(c *Config) { c.QueueLength = 0 }, wantErr: true},
		{name: "max below min", mutate: func(c *Config) { c.MinReplicas = 30 }, wantErr: true},
		{name: "zero polling", mutate: func(c *Config) { c.PollingInterval = 0 }, wantErr: true},
		{name: "negative min", mutate: func(c *Config) { c.MinReplicas = -1 }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			if err := c.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}
