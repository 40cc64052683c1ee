# The admission policy OPA evaluates in `make demo`. `demo up` asks OPA for
# data.demo.admission.decision with AdmissionReview inputs; OPA's decision_logs plugin uploads every decision
# to the collector's decision_logs receiver.
package demo.admission

deny contains msg if {
	input.request.kind.kind == "Pod"
	some c in input.request.object.spec.containers
	endswith(c.image, ":latest")
	msg := sprintf("container %s uses the latest tag", [c.name])
}

deny contains msg if {
	input.request.kind.kind == "Pod"
	not input.request.object.metadata.labels.team
	msg := "pods must have a team label"
}

decision := {"allowed": count(deny) == 0, "deny": deny}
