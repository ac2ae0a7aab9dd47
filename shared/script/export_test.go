package script

import "time"

// WaitWarm waits until the service has its sandboxes built ahead (tests
// and benchmarks of a run that finds one ready).
func (s *Service) WaitWarm() {
	for {
		s.sandboxes.mu.Lock()
		n := len(s.sandboxes.ready)
		s.sandboxes.mu.Unlock()
		if n >= warmSize {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}
