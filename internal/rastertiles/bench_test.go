package rastertiles

import (
	"bytes"
	"image/png"
	"testing"
)

// BenchmarkTile renders and encodes one uncached tile (internal tile read, inflated, drawn,
// encoded; the decoded-tile cache off), for the RGB fixture at its full resolution and at an
// overview GDAL did not align, and the DEM through a ramp. image/png is the reference encoder.
func BenchmarkTile(b *testing.B) {
	cases := []struct {
		name, fixture string
		spec          func() any
		z             int
		p             Params
	}{
		{name: "rgb/z9", fixture: "rgb-DEFLATE", z: 9},
		{name: "rgb/z8-unaligned", fixture: "rgb-DEFLATE", z: 8},
		{name: "dem/z9-viridis", fixture: "dem", z: 9, p: Params{Colormap: "viridis"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := rgbSpec("DEFLATE")
			if c.fixture == "dem" {
				s = demSpec()
			}
			rs, _ := open(b, fixture(b, c.fixture, s), Meta{})
			rs.tiles = nil
			p, _ := c.p.Check()
			x, y := tileOf(c.z, 6.3, 49.3)
			b.Run("render", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if img, err := rs.Tile(c.z, x, y, p); err != nil || img == nil {
						b.Fatal(err)
					}
				}
			})
			img, _ := rs.Tile(c.z, x, y, p)
			b.Run("png", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := EncodePNG(img); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("image-png-bestspeed", func(b *testing.B) {
				enc := png.Encoder{CompressionLevel: png.BestSpeed}
				for i := 0; i < b.N; i++ {
					var buf bytes.Buffer
					if err := enc.Encode(&buf, img); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
