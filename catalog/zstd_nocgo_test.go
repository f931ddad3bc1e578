//go:build !cgo

package catalog

// hexIDLevel is the level the adaptive codec settles on for random hex
// ids: the pure-Go SpeedFastest leaves them about 9% larger than
// SpeedDefault (it spends less on finding matches), over the 2% slack.
const hexIDLevel = zstdSmallLevel
