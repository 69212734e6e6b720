package rastertiles

import "sort"

// A ramp is a colour map as stops at positions 0..1, interpolated linearly in sRGB. The stops
// are the published ones: matplotlib's perceptually uniform maps (viridis, inferno, plasma,
// magma: van der Walt and Smith, sampled at ninths as d3-scale-chromatic publishes them),
// ColorBrewer's 9-class YlOrRd and BuGn (Brewer, colorbrewer2.org), and matplotlib's terrain
// segment data.
type stop struct {
	at      float64
	r, g, b uint8
}

func hex(at float64, c uint32) stop {
	return stop{at: at, r: uint8(c >> 16), g: uint8(c >> 8), b: uint8(c)}
}

// evenly spaces colours from 0 to 1.
func evenly(colors ...uint32) []stop {
	out := make([]stop, len(colors))
	for i, c := range colors {
		out[i] = hex(float64(i)/float64(len(colors)-1), c)
	}
	return out
}

var ramps = map[string][]stop{
	"gray":    evenly(0x000000, 0xffffff),
	"viridis": evenly(0x440154, 0x482878, 0x3e4989, 0x31688e, 0x26828e, 0x1f9e89, 0x35b779, 0x6ece58, 0xfde725),
	"inferno": evenly(0x000004, 0x1f0c48, 0x550f6d, 0x88226a, 0xba3655, 0xe35933, 0xf98e09, 0xf9cb35, 0xfcffa4),
	"magma":   evenly(0x000004, 0x1c1044, 0x4f127b, 0x812581, 0xb5367a, 0xe55964, 0xfb8761, 0xfec287, 0xfcfdbf),
	"plasma":  evenly(0x0d0887, 0x4c02a1, 0x7e03a8, 0xa92395, 0xcc4778, 0xe56b5d, 0xf89540, 0xfdc527, 0xf0f921),
	"ylorrd":  evenly(0xffffcc, 0xffeda0, 0xfed976, 0xfeb24c, 0xfd8d3c, 0xfc4e2a, 0xe31a1c, 0xbd0026, 0x800026),
	"bugn":    evenly(0xf7fcfd, 0xe5f5f9, 0xccece6, 0x99d8c9, 0x66c2a4, 0x41ae76, 0x238b45, 0x006d2c, 0x00441b),
	// matplotlib's _terrain_data: (0, (0.2, 0.2, 0.6)), (0.15, (0, 0.6, 1)), (0.25, (0, 0.8, 0.4)),
	// (0.5, (1, 1, 0.6)), (0.75, (0.5, 0.36, 0.33)), (1, (1, 1, 1)).
	"terrain": {
		{0, 51, 51, 153}, {0.15, 0, 153, 255}, {0.25, 0, 204, 102},
		{0.5, 255, 255, 153}, {0.75, 128, 92, 84}, {1, 255, 255, 255},
	},
}

// Colormaps are the names a request may give.
func Colormaps() []string {
	out := make([]string, 0, len(ramps))
	for n := range ramps {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// lut is a ramp sampled at 256 steps, [i] the colour of i/255, RGB.
type lut [256][3]uint8

var luts = func() map[string]*lut {
	out := map[string]*lut{}
	for name, stops := range ramps {
		var l lut
		for i := range l {
			l[i] = sample(stops, float64(i)/255)
		}
		out[name] = &l
	}
	return out
}()

func sample(stops []stop, t float64) [3]uint8 {
	for i := 1; i < len(stops); i++ {
		a, b := stops[i-1], stops[i]
		if t <= b.at {
			f := (t - a.at) / (b.at - a.at)
			mix := func(x, y uint8) uint8 { return uint8(float64(x) + (float64(y)-float64(x))*f + 0.5) }
			return [3]uint8{mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)}
		}
	}
	l := stops[len(stops)-1]
	return [3]uint8{l.r, l.g, l.b}
}
