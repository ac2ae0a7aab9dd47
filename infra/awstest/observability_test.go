package awstest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// TestTemplateObservability: template.yaml passes cfn-lint and the SAM
// translator with its observability section, which holds the recommended
// alarms for its resources (each function's errors, throttles and p99
// duration; the API's 5xx and latency; both workflows' failed and timed
// out executions; the table's throttles; the approver topic's delivery
// failures), countersign's own alarms on its EMF metrics, the alarm topic
// parameter wired to every alarm, and a dashboard whose body is JSON.
func TestTemplateObservability(t *testing.T) {
	if _, err := exec.LookPath("cfn-lint"); err != nil {
		testenv.Missing(t, testenv.CfnLint, "cfn-lint is not installed; install it with: python3 -m pip install cfn-lint aws-sam-translator")
	}
	file, err := filepath.Abs(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lintErr := make(chan error, 1)
	go func() { lintErr <- lintTemplate(file) }()
	tpl := loadTemplate(t, file)

	params := obj(tpl.Raw["Parameters"])
	if p := obj(params["AlarmTopicArn"]); p["Default"] != "" || p["Type"] != "String" {
		t.Errorf("AlarmTopicArn parameter = %v, want an optional String", p)
	}

	type want struct{ namespace, metric, dimension, value string }
	var wants = map[string]want{}
	for _, f := range []string{"Gateway", "Approve", "Operator", "Notify", "Execute", "Finalize"} {
		wants[f+"ErrorsAlarm"] = want{"AWS/Lambda", "Errors", "FunctionName", f + "Function"}
		wants[f+"ThrottlesAlarm"] = want{"AWS/Lambda", "Throttles", "FunctionName", f + "Function"}
		wants[f+"DurationAlarm"] = want{"AWS/Lambda", "Duration", "FunctionName", f + "Function"}
	}
	wants["Api5xxAlarm"] = want{"AWS/ApiGateway", "5xx", "ApiId", "HttpApi"}
	wants["ApiLatencyAlarm"] = want{"AWS/ApiGateway", "Latency", "ApiId", "HttpApi"}
	for _, m := range []string{"Confirm", "Batch"} {
		wants[m+"ExecutionsFailedAlarm"] = want{"AWS/States", "ExecutionsFailed", "StateMachineArn", m + "StateMachine"}
		wants[m+"ExecutionsTimedOutAlarm"] = want{"AWS/States", "ExecutionsTimedOut", "StateMachineArn", m + "StateMachine"}
	}
	wants["TableReadThrottlesAlarm"] = want{"AWS/DynamoDB", "ReadThrottleEvents", "TableName", "Table"}
	wants["TableWriteThrottlesAlarm"] = want{"AWS/DynamoDB", "WriteThrottleEvents", "TableName", "Table"}
	wants["ApproverTopicDeliveryFailuresAlarm"] = want{"AWS/SNS", "NumberOfNotificationsFailed", "TopicName", "ApproverTopic"}
	for _, m := range []string{"Expirations", "UpstreamErrors", "AuditVerifyFailures"} {
		wants[m+"Alarm"] = want{"countersign/${AWS::StackName}", m, "", ""}
	}

	alarms := tpl.resources("AWS::CloudWatch::Alarm")
	for id, w := range wants {
		if !slices.Contains(alarms, id) {
			t.Errorf("no alarm %s", id)
			continue
		}
		p := tpl.properties(id)
		ns, _ := json.Marshal(p["Namespace"])
		if p["MetricName"] != w.metric || !strings.Contains(string(ns), w.namespace) {
			t.Errorf("%s watches %s %v, want %s %s", id, ns, p["MetricName"], w.namespace, w.metric)
		}
		dims, _ := json.Marshal(p["Dimensions"])
		if w.dimension != "" && (!strings.Contains(string(dims), `"Name":"`+w.dimension+`"`) || !strings.Contains(string(dims), w.value)) {
			t.Errorf("%s dimensions %s, want %s of %s", id, dims, w.dimension, w.value)
		}
		for _, k := range []string{"AlarmActions", "OKActions"} {
			if a, _ := json.Marshal(p[k]); !strings.Contains(string(a), "HasAlarmTopic") || !strings.Contains(string(a), "AlarmTopicArn") {
				t.Errorf("%s %s = %s, want the alarm topic when one is given", id, k, a)
			}
		}
		if p["TreatMissingData"] != "notBreaching" {
			t.Errorf("%s TreatMissingData = %v: a quiet stack must not alarm", id, p["TreatMissingData"])
		}
	}
	if c := obj(obj(tpl.Raw["Resources"])["ApproverTopicDeliveryFailuresAlarm"])["Condition"]; c != "HasApproverEmail" {
		t.Errorf("the SNS alarm's condition = %v, want HasApproverEmail (the topic exists only then)", c)
	}

	dash := tpl.resources("AWS::CloudWatch::Dashboard")
	if len(dash) != 1 {
		t.Fatalf("dashboards %v, want one", dash)
	}
	body := tpl.properties(dash[0])["DashboardBody"]
	sub, _ := obj(body)["Fn::Sub"].(string)
	if sub == "" {
		t.Fatalf("DashboardBody = %v, want a Fn::Sub string", body)
	}
	// Substitute each ${...} as CloudFormation would, then it must be JSON.
	filled := regexp.MustCompile(`\$\{[^}]+\}`).ReplaceAllString(sub, "x")
	var d struct {
		Widgets []struct {
			Properties struct {
				Title string `json:"title"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(filled), &d); err != nil {
		t.Fatalf("dashboard body is not JSON: %v", err)
	}
	if len(d.Widgets) < 10 {
		t.Errorf("dashboard has %d widgets", len(d.Widgets))
	}
	for _, m := range []string{"Decisions", "TimeToDecision", "Expirations", "UpstreamLatency", "AWS/Lambda", "AWS/ApiGateway", "AWS/States", "AWS/DynamoDB"} {
		if !strings.Contains(sub, m) {
			t.Errorf("the dashboard shows no %s", m)
		}
	}
	// The functions write their EMF lines into the namespace the alarms read.
	env, _ := json.Marshal(obj(obj(obj(tpl.Raw["Globals"])["Function"])["Environment"])["Variables"])
	if !strings.Contains(string(env), `"COUNTERSIGN_METRICS_NAMESPACE":{"Fn::Sub":"countersign/${AWS::StackName}"}`) {
		t.Errorf("Globals do not set COUNTERSIGN_METRICS_NAMESPACE to the alarms' namespace: %s", env)
	}
	if err := <-lintErr; err != nil {
		t.Error(err)
	}
}
