from django.urls import path

from coupons.api import views

urlpatterns = [  # the claim first: the crowd's path, tried first
    path("coupons/<id:template_id>/claim", views.CouponClaimView.as_view(), name="coupon-claim"),
    path("coupons", views.CouponListView.as_view(), name="coupons"),
    path("coupons/mine", views.MyCouponListView.as_view(), name="my-coupons"),
    path("coupons/redeem", views.CouponRedeemView.as_view(), name="coupon-redeem"),
]
