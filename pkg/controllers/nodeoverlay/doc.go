// Package nodeoverlay writes each NodeOverlay's status: Ready (the overlay
// parses and is applied to the instance types, or why not) and Conflicting
// (another overlay of the same weight decides on an offering's price or a
// type's resource it also decides on; the name order then picks the
// winner, catalog.ApplyOverlays). The rule itself is catalog's; this
// controller only reports it. It writes status through statuspatch and
// imports no AWS SDK.
package nodeoverlay
