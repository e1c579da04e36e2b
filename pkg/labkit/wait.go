package labkit

import "time"

// Poll calls cond every interval until it returns nil, and returns nil
// then, or cond's last error once timeout has passed.
func Poll(timeout, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(interval)
	}
}
