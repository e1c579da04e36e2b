package output

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Grafana's default palette, so the chart reads like a familiar dashboard.
var (
	green  = color.RGBA{R: 0x56, G: 0xA6, B: 0x4B, A: 0xff}
	yellow = color.RGBA{R: 0xE0, G: 0xB4, B: 0x00, A: 0xff}
	blue   = color.RGBA{R: 0x37, G: 0x87, B: 0xE0, A: 0xff}
	orange = color.RGBA{R: 0xFF, G: 0x78, B: 0x00, A: 0xff}
	red    = color.RGBA{R: 0xE0, G: 0x2F, B: 0x44, A: 0xff}
	purple = color.RGBA{R: 0x8F, G: 0x3B, B: 0xB8, A: 0xff}
	grid   = color.Gray{Y: 0xdd}
)

type series struct {
	name  string
	color color.Color
	dash  bool
	value func(Sample) float64
}

type panel struct {
	title  string
	ylabel string
	// counts are whole numbers: integer ticks and step lines, since a pod
	// count jumps rather than slides.
	counts bool
	series []series
}

var panels = []panel{
	{title: "SQS queue", ylabel: "messages", series: []series{
		{name: "visible", color: blue, value: func(s Sample) float64 { return float64(s.QueueVisible) }},
		{name: "in flight", color: orange, value: func(s Sample) float64 { return float64(s.QueueInFlight) }},
	}},
	{title: "Pods", ylabel: "pods", counts: true, series: []series{
		{name: "desired", color: purple, dash: true, value: func(s Sample) float64 { return float64(s.DesiredReplicas) }},
		{name: "running", color: green, value: func(s Sample) float64 { return float64(s.RunningPods) }},
		{name: "pending", color: red, value: func(s Sample) float64 { return float64(s.PendingPods) }},
	}},
	{title: "Nodes", ylabel: "nodes", counts: true, series: []series{
		// On-demand first and dashed, so the spot curve stays visible where they meet.
		{name: "on-demand", color: blue, dash: true, value: func(s Sample) float64 { return float64(s.NodesOnDemand) }},
		{name: "spot", color: green, value: func(s Sample) float64 { return float64(s.NodesSpot) }},
	}},
	{title: "Cost", ylabel: "USD per hour", series: []series{
		{name: "all instances", color: yellow, value: func(s Sample) float64 { return s.CostPerHour }},
	}},
}

// WritePNG draws the timeline as a vertical stack of panels sharing the
// time axis (1200×1000 pixels).
func WritePNG(w io.Writer, title string, samples []Sample) error {
	const dpi = 96
	width, height := vg.Length(1200*72/dpi), vg.Length(1000*72/dpi)
	shown := panels
	if !hasQueue(samples) {
		shown = panels[1:]
	}
	rows := make([][]*plot.Plot, len(shown))
	for i, pn := range shown {
		p, err := drawPanel(pn, samples)
		if err != nil {
			return err
		}
		if i == 0 {
			p.Title.Text = title + " — " + pn.title
		}
		rows[i] = []*plot.Plot{p}
	}
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(rows), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6),
		PadLeft: vg.Points(8), PadRight: vg.Points(12), PadY: vg.Points(10)}
	canvases := plot.Align(rows, tiles, dc)
	for i := range rows {
		rows[i][0].Draw(canvases[i][0])
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("writing chart: %w", err)
	}
	return nil
}

// hasQueue reports whether any message was ever seen; without one the queue
// panel would be an empty frame.
func hasQueue(samples []Sample) bool {
	for _, s := range samples {
		if s.QueueVisible+s.QueueInFlight > 0 {
			return true
		}
	}
	return false
}

func drawPanel(pn panel, samples []Sample) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = "time (min)"
	p.X.Tick.Marker = stepTicks{target: 12, integer: true}
	p.Y.Label.Text = pn.ylabel
	p.Y.Tick.Marker = stepTicks{target: 5, integer: pn.counts}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(4)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = grid, grid
	p.Add(g)
	ymax := 0.0
	for _, s := range pn.series {
		xys := make(plotter.XYs, len(samples))
		for i, smp := range samples {
			xys[i].X = smp.T.Minutes()
			xys[i].Y = s.value(smp)
			ymax = max(ymax, xys[i].Y)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plotting %s: %w", s.name, err)
		}
		if pn.counts {
			l.StepStyle = plotter.PostStep
		}
		l.Color = s.color
		l.Width = vg.Points(1.6)
		if s.dash {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	if ymax == 0 {
		ymax = 1
	}
	// Headroom so the legend does not sit on the curves' peaks.
	p.Y.Max = ymax * 1.3
	return p, nil
}

// stepTicks labels an axis every 1, 2 or 5 × 10ⁿ units, about target times;
// integer axes never get fractional ticks.
type stepTicks struct {
	target  int
	integer bool
}

func (t stepTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if span <= 0 {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'f', -1, 64)}}
	}
	raw := span / float64(t.target)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= 0.75*raw {
			step = m * mag
			break
		}
	}
	if t.integer {
		step = math.Max(1, math.Round(step))
	}
	// As many decimals as the step has, so 0.30000000000000004 prints as 0.3.
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		v := i * step
		label := strconv.FormatFloat(v, 'f', decimals, 64)
		if i == 0 {
			label = "0"
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
		if minor := v + step/2; !t.integer || step >= 2 {
			if minor < hi {
				ticks = append(ticks, plot.Tick{Value: minor})
			}
		}
	}
	return ticks
}
