package rastertiles

import (
	"bytes"
	"image"
	"image/png"
	"math/rand/v2"
	"testing"
)

// EncodePNG picks LZ77 matches for smooth pictures and Huffman coding alone for noisy ones; both
// must give back every pixel, opaque (RGB) and with transparency (RGBA), one after the other
// from the same pooled writers.
func TestEncodePNGRoundTrips(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	pictures := map[string]func(x, y int) [4]byte{
		"smooth":             func(x, y int) [4]byte { return [4]byte{byte(x), byte(y), 90, 255} },
		"noisy":              func(x, y int) [4]byte { return [4]byte{byte(rnd.IntN(256)), byte(x + rnd.IntN(9)), byte(y), 255} },
		"smooth-transparent": func(x, y int) [4]byte { return [4]byte{byte(x), 7, 7, byte(255 * ((x / 64) % 2))} },
		"noisy-transparent": func(x, y int) [4]byte {
			return [4]byte{byte(rnd.IntN(256)), byte(rnd.IntN(256)), 1, byte(rnd.IntN(2) * 255)}
		},
	}
	for _, name := range []string{"smooth", "noisy", "smooth-transparent", "noisy-transparent", "smooth", "noisy"} {
		img := image.NewNRGBA(image.Rect(0, 0, 256, 256))
		for y := 0; y < 256; y++ {
			for x := 0; x < 256; x++ {
				c := pictures[name](x, y)
				if c[3] == 0 {
					c = [4]byte{} // what paint leaves without data
				}
				copy(img.Pix[y*img.Stride+4*x:], c[:])
			}
		}
		raw, err := EncodePNG(img)
		if err != nil {
			t.Fatal(err)
		}
		back, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for y := 0; y < 256; y++ {
			for x := 0; x < 256; x++ {
				r, g, b, a := back.At(x, y).RGBA()
				want := img.NRGBAAt(x, y)
				if a == 0 && want.A == 0 {
					continue
				}
				if byte(r>>8) != want.R || byte(g>>8) != want.G || byte(b>>8) != want.B || byte(a>>8) != want.A {
					t.Fatalf("%s: pixel %d,%d is %d,%d,%d,%d, want %v", name, x, y, r>>8, g>>8, b>>8, a>>8, want)
				}
			}
		}
		t.Logf("%s: %d bytes", name, len(raw))
	}
}

// TestFilterUp: the eight-bytes-at-a-time filter is the byte-by-byte one, zero count included,
// for every length around a word's and for bytes that borrow (0 - 255) or are equal.
func TestFilterUp(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 5))
	for n := 0; n < 40; n++ {
		cur, prev := make([]byte, n), make([]byte, n)
		for i := range cur {
			cur[i], prev[i] = byte(rnd.IntN(4)*85), byte(rnd.IntN(4)*85)
		}
		want, wantZeros := make([]byte, n), 0
		for i := range want {
			if want[i] = cur[i] - prev[i]; want[i] == 0 {
				wantZeros++
			}
		}
		got := make([]byte, n)
		if zeros := filterUp(got, cur, prev); !bytes.Equal(got, want) || zeros != wantZeros {
			t.Fatalf("%d bytes: %v (%d zeros), want %v (%d)", n, got, zeros, want, wantZeros)
		}
	}
}
