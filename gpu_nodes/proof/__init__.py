"""What makes a node proven: its target, the checklist, what the Jobs say, the judgement of one look
and the recovery rule. Pure over the objects the cluster reader returns: no Pulumi, no HTTP."""
