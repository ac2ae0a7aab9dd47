// Command notify is the workflow's waitForTaskToken task: it stores the task
// token beside the confirmation and sends each approver channel its signed link.
package main

import (
	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/notify/snsmail"
)

func main() {
	d := awsenv.MustLoad(awsenv.NeedSigningKey, awsenv.WithEmail(snsmail.Deployed))
	awsenv.Start(d, d.NotifyTask().Handle)
}
