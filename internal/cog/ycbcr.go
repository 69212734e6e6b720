package cog

import "image"

// YCbCr to RGB as the reference decoders do it, so that tiles match what GDAL shows: chroma
// subsampled 2x2 is upsampled with the triangle ("fancy") filter of libjpeg and libwebp, weights
// 9/16, 3/16, 3/16, 1/16 of the four nearest chroma samples, and converted with JFIF's full-range
// matrix for JPEG and BT.601's limited-range one for VP8 (WEBP), in libwebp's fixed point.

// fullRange is JFIF's conversion (image/color's rounding).
func fullRange(y, cb, cr int32) (uint8, uint8, uint8) {
	yy := y * 0x10101
	cb1, cr1 := cb-128, cr-128
	return clamp16(yy + 91881*cr1), clamp16(yy - 22554*cb1 - 46802*cr1), clamp16(yy + 116130*cb1)
}

func clamp16(v int32) uint8 {
	v >>= 16
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// limitedRange is libwebp's VP8YUVToR/G/B (src/dsp/yuv.h).
func limitedRange(y, u, v int32) (uint8, uint8, uint8) {
	hi := func(v, c int32) int32 { return (v * c) >> 8 }
	yy := hi(y, 19077)
	return clip6(yy + hi(v, 26149) - 14234), clip6(yy - hi(u, 6419) - hi(v, 13320) + 8708), clip6(yy + hi(u, 33050) - 17685)
}

func clip6(v int32) uint8 {
	if v&^((256<<6)-1) == 0 {
		return uint8(v >> 6)
	}
	if v < 0 {
		return 0
	}
	return 255
}

// ycbcrPixels writes m's pixels as RGB (and alpha from a, when spp is 4) into out.
func ycbcrPixels(m *image.YCbCr, a *image.NYCbCrA, out []byte, spp int, vp8 bool) {
	conv := fullRange
	if vp8 {
		conv = limitedRange
	}
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	fancy := m.SubsampleRatio == image.YCbCrSubsampleRatio420
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			yi := m.YOffset(x+b.Min.X, y+b.Min.Y)
			var cb, cr int32
			if fancy {
				cb, cr = fancy420(m, x, y, w, h)
			} else {
				ci := m.COffset(x+b.Min.X, y+b.Min.Y)
				cb, cr = int32(m.Cb[ci]), int32(m.Cr[ci])
			}
			r, g, bl := conv(int32(m.Y[yi]), cb, cr)
			o := (y*w + x) * spp
			out[o], out[o+1], out[o+2] = r, g, bl
			if spp == 4 {
				out[o+3] = 255
				if a != nil {
					out[o+3] = a.A[a.AOffset(x+b.Min.X, y+b.Min.Y)]
				}
			}
		}
	}
}

// fancy420 is the chroma of pixel (x, y) of a 4:2:0 image: the nearest chroma sample weighted 9,
// its horizontal and vertical neighbours on the pixel's side 3 each, the diagonal one 1.
func fancy420(m *image.YCbCr, x, y, w, h int) (int32, int32) {
	cw, ch := (w+1)/2, (h+1)/2
	cx, cy := x/2, y/2
	nx, ny := cx-1, cy-1
	if x&1 == 1 {
		nx = cx + 1
	}
	if y&1 == 1 {
		ny = cy + 1
	}
	nx = max(0, min(nx, cw-1))
	ny = max(0, min(ny, ch-1))
	at := func(p []uint8, cx, cy int) int32 { return int32(p[cy*m.CStride+cx]) }
	f := func(p []uint8) int32 {
		return (9*at(p, cx, cy) + 3*at(p, nx, cy) + 3*at(p, cx, ny) + at(p, nx, ny) + 8) >> 4
	}
	return f(m.Cb), f(m.Cr)
}
