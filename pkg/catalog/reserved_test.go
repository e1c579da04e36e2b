package catalog

import (
	"strconv"
	"testing"
	"time"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestWithReservations(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	m5 := &InstanceType{Name: "m5.xlarge", Offerings: Offerings{
		{Zone: "us-east-1a", CapacityType: nsv1.CapacityTypeOnDemand, Price: 0.192, Available: true},
		{Zone: "us-east-1a", CapacityType: nsv1.CapacityTypeSpot, Price: 0.07, Available: true},
	}}
	c6g := &InstanceType{Name: "c6g.large", Offerings: Offerings{{Zone: "us-east-1a", CapacityType: nsv1.CapacityTypeSpot, Price: 0.03, Available: true}}}
	block := awsv1.CapacityReservationTypeCapacityBlock
	tests := []struct {
		name string
		rs   []Reservation
		// want: reserved offerings of m5.xlarge as "id/zone/available".
		want []string
	}{
		{"none", nil, nil},
		{"one odcr", []Reservation{{ID: "cr-1", InstanceType: "m5.xlarge", Zone: "us-east-1b", Available: 10}}, []string{"cr-1/us-east-1b/10"}},
		{"used up is left out", []Reservation{{ID: "cr-1", InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 0}}, nil},
		{"ended odcr is left out", []Reservation{{ID: "cr-1", InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 3, End: now}}, nil},
		{"odcr ending later is kept", []Reservation{{ID: "cr-1", InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 3, End: now.Add(time.Minute)}}, []string{"cr-1/us-east-1a/3"}},
		{"capacity block within 40m of its end is left out", []Reservation{{ID: "cr-2", Type: block, InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 2, End: now.Add(40 * time.Minute)}}, nil},
		{"capacity block 41m before its end is kept", []Reservation{{ID: "cr-2", Type: block, InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 2, End: now.Add(41 * time.Minute)}}, []string{"cr-2/us-east-1a/2"}},
		{"two, in id order, other types ignored", []Reservation{
			{ID: "cr-9", InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 1},
			{ID: "cr-3", InstanceType: "m5.xlarge", Zone: "us-east-1c", Available: 4},
			{ID: "cr-4", InstanceType: "r7i.large", Zone: "us-east-1a", Available: 4},
		}, []string{"cr-3/us-east-1c/4", "cr-9/us-east-1a/1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WithReservations([]*InstanceType{m5, c6g}, tt.rs, now)
			if got[1] != c6g {
				t.Error("a type without reservations was copied")
			}
			var res []string
			for _, o := range got[0].Offerings {
				if o.CapacityType != nsv1.CapacityTypeReserved {
					continue
				}
				if o.Price != 0 || !o.Available || o.Reservation == nil {
					t.Errorf("reserved offering %+v: want price 0, available, with its reservation", o)
					continue
				}
				res = append(res, o.Reservation.ID+"/"+o.Zone+"/"+strconv.Itoa(o.Reservation.Available))
			}
			if len(res) != len(tt.want) {
				t.Fatalf("reserved offerings %v, want %v", res, tt.want)
			}
			for i := range res {
				if res[i] != tt.want[i] {
					t.Errorf("reserved offerings %v, want %v", res, tt.want)
				}
			}
			if len(m5.Offerings) != 2 {
				t.Errorf("the shared type was changed: %v", m5.Offerings)
			}
			if c, _ := got[0].Offerings.Cheapest(); len(tt.want) > 0 && c.CapacityType != nsv1.CapacityTypeReserved {
				t.Errorf("cheapest offering %+v, want a reserved one", c)
			}
		})
	}
}

func TestDrainAt(t *testing.T) {
	end := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	if got := DrainAt(awsv1.CapacityReservationTypeCapacityBlock, end); !got.Equal(end.Add(-40 * time.Minute)) {
		t.Errorf("capacity block drains at %v, want 40m before %v", got, end)
	}
	if got := DrainAt(awsv1.CapacityReservationTypeDefault, end); !got.Equal(end) {
		t.Errorf("odcr: %v, want its end", got)
	}
	if got := DrainAt(awsv1.CapacityReservationTypeCapacityBlock, time.Time{}); !got.IsZero() {
		t.Errorf("no end: %v", got)
	}
}
