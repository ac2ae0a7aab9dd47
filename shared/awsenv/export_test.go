package awsenv

// SetStep sets what Load calls at the end of each of its steps.
func SetStep(f func(string)) { step = f }
