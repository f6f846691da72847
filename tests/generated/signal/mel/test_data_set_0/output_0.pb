
ByJ(å…ã@ÎB#@Î@cŒB²x¬BQËCCÃ0ÄCÖ<ÄBDbtCíxÊC