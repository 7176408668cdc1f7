// Package route is what passes between the Runtime, which routes an
// operation to its session, and whoever runs operations on sessions (the
// Runtime's own calls, the task drivers): Route, how the operation reached
// its session; Op, the operation; and TaskPin, the claim a durable task's
// call carries on its session, which the Runtime honours (SharedPins is
// its side of a native task's shared session).
//
// It imports mcpclient/session, mcpclient/workspace and internal/jsonscan
// only; it must not import mcpclient or mcpclient/taskdriver.
package route
