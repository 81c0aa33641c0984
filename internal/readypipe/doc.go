// Package readypipe is how a copy of ktrace started in the background
// (the mount daemon of fusefs.StartDaemon, the probe reaper of
// tracer.StartReaper) tells the process that started it that it is
// ready: one line on a pipe whose write end it inherited.
package readypipe
