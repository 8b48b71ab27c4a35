package checkpoints

import "time"

// SetCatalogClock sets the clock a Catalog judges file times by (tests: a
// clock ahead of the file system makes every index look settled).
func SetCatalogClock(c *Catalog, now func() time.Time) { c.now = now }

// EncodeSummaryForTest encodes s and decodes it again.
func EncodeSummaryForTest(s Summary) ([]byte, Summary) {
	b := encodeSummary(s)
	got, err := decodeSummary(b)
	if err != nil {
		panic(err)
	}
	return b, got
}

// DecodeSummaryForTest decodes an encoded summary.
func DecodeSummaryForTest(b []byte) (Summary, error) { return decodeSummary(b) }
