package sqlbuild

// Spans is the antimeridian rule for boxes in geographic coordinates: a west edge greater than
// the east edge is a box that crosses the antimeridian, and is searched as two boxes, west..180
// and -180..east. A box that does not cross is one span.
func Spans(west, east float64) [][2]float64 {
	if west > east {
		return [][2]float64{{west, 180}, {-180, east}}
	}
	return [][2]float64{{west, east}}
}
