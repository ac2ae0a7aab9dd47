//go:build !race

package callbody

const raceEnabled = false
